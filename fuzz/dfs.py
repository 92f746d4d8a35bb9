"""atheris campaign for Dragonfly's .dfs snapshot sets: fuzz/redis_harness.py's ``check_dfs``, with
fuzz/campaign.py's defaults; seeds from fuzz/make_corpus.py.

    python3 fuzz/dfs.py -atheris_runs=1000000 fuzz/corpus/dfs
"""

import sys

from campaign import DATAFLOW, NOT_INSTRUMENTED, RSS_LIMIT_MB

#: the longest input when the command line gives no ``-max_len``
MAX_LEN = 4096


def main() -> None:
    import atheris
    from atheris.import_hook import HookManager

    import redis_harness

    with HookManager({"dcpinspect"}, set(NOT_INSTRUMENTED), True, trace_dataflow=DATAFLOW):
        import dcpinspect.families.redis.dfs  # noqa: F401
        import dcpinspect.families.redis.session  # noqa: F401
    argv = list(sys.argv)
    for option, value in (("-rss_limit_mb", RSS_LIMIT_MB), ("-max_len", MAX_LEN)):
        if not any(a.startswith(option + "=") for a in argv):
            argv.insert(1, f"{option}={value}")
    atheris.Setup(argv, redis_harness.check_dfs)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
