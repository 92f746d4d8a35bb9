"""The optional C parts, each beside the Python that drives it: MCBP's fast lane for jsonl
(dcpinspect/families/mcbp/_lane.c), RDB's CRC-64, LZF and packed layouts
(dcpinspect/families/redis/rdb/_rdb.c), the prefix report's table
(dcpinspect/families/redis/reports/_prefixes.c), the pcap reader's inner loop (dcpinspect/sources/_pcap.c)
and the JSON Lines writer's line check (dcpinspect/outputs/_jsonline.c). Without a compiler
the package installs and runs the same, on the Python path alone."""

from setuptools import Extension, setup

FLAGS = ["-O3", "-Wall", "-Wextra", "-Wno-unused-parameter"]


def optional(name: str, source: str, **kw) -> Extension:
    return Extension(name, [source], optional=True, extra_compile_args=FLAGS, **kw)


setup(ext_modules=[
    optional("dcpinspect.families.mcbp._lane", "dcpinspect/families/mcbp/_lane.c",
             depends=["dcpinspect/families/mcbp/_lane_rules.h"]),
    optional("dcpinspect.families.redis.rdb._rdb", "dcpinspect/families/redis/rdb/_rdb.c",
             depends=["dcpinspect/families/redis/rdb/_rdb_lines.h"]),
    optional("dcpinspect.families.redis.reports._prefixes", "dcpinspect/families/redis/reports/_prefixes.c"),
    optional("dcpinspect.sources._pcap", "dcpinspect/sources/_pcap.c"),
    optional("dcpinspect.outputs._jsonline", "dcpinspect/outputs/_jsonline.c"),
])
