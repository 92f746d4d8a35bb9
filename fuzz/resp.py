"""atheris campaign for a Redis connection's decoding (fuzz/resp_harness.py, ``check_resp``), with
fuzz/campaign.py's defaults; seeds: any RESP conversation.

    python3 fuzz/resp.py -atheris_runs=1000000 fuzz/corpus/resp
"""

import sys

from campaign import DATAFLOW, NOT_INSTRUMENTED, RSS_LIMIT_MB

#: the longest input when the command line gives no ``-max_len``
MAX_LEN = 4096


def main() -> None:
    import atheris
    from atheris.import_hook import HookManager

    import resp_harness

    with HookManager({"dcpinspect"}, set(NOT_INSTRUMENTED), True, trace_dataflow=DATAFLOW):
        import dcpinspect.families.redis.resp  # noqa: F401
        import dcpinspect.families.redis.session  # noqa: F401
    argv = list(sys.argv)
    for option, value in (("-rss_limit_mb", RSS_LIMIT_MB), ("-max_len", MAX_LEN)):
        if not any(a.startswith(option + "=") for a in argv):
            argv.insert(1, f"{option}={value}")
    atheris.Setup(argv, resp_harness.check_resp)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
