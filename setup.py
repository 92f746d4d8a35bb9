"""The optional C parts: the fast lane for jsonl (dcpinspect/_lane.c) and RDB's CRC-64, LZF and
packed layouts (dcpinspect/_rdb.c). Without a compiler the package installs and runs the
same, on the Python path alone."""

from setuptools import Extension, setup

FLAGS = ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]

setup(ext_modules=[Extension("dcpinspect._lane", ["dcpinspect/_lane.c"], depends=["dcpinspect/_lane_rules.h"], optional=True,
                             extra_compile_args=FLAGS),
                   Extension("dcpinspect._rdb", ["dcpinspect/_rdb.c"], optional=True, extra_compile_args=FLAGS)])
