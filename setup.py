"""The optional C fast lane for jsonl (dcpinspect/_lane.c): without a compiler the
package installs and runs the same, on the Python path alone."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("dcpinspect._lane", ["dcpinspect/_lane.c"], optional=True,
                             extra_compile_args=["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"])])
