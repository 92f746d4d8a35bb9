"""atheris campaign for the RDB decoder (fuzz/rdb_harness.py, ``check_rdb``), with
fuzz/campaign.py's defaults; seeds: the rdb-librdb corpus files.

    python3 fuzz/rdb.py -atheris_runs=1000000 fuzz/corpus/rdb
"""

import sys

from campaign import DATAFLOW, NOT_INSTRUMENTED, RSS_LIMIT_MB

#: the longest input when the command line gives no ``-max_len``
MAX_LEN = 4096


def main() -> None:
    import atheris
    from atheris.import_hook import HookManager

    import rdb_harness

    with HookManager({"dcpinspect"}, set(NOT_INSTRUMENTED), True, trace_dataflow=DATAFLOW):
        import dcpinspect.families.redis.rdb  # noqa: F401
        import dcpinspect.families.redis.report  # noqa: F401
    argv = list(sys.argv)
    for option, value in (("-rss_limit_mb", RSS_LIMIT_MB), ("-max_len", MAX_LEN)):
        if not any(a.startswith(option + "=") for a in argv):
            argv.insert(1, f"{option}={value}")
    atheris.Setup(argv, rdb_harness.check_rdb)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
