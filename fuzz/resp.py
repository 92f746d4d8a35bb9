"""atheris campaign for a Redis connection's decoding (fuzz/resp_harness.py, ``check_resp``), with
fuzz/campaign.py's defaults; seeds: any RESP conversation.

    python3 fuzz/resp.py -atheris_runs=1000000 fuzz/corpus/resp
"""

from campaign import fuzz

#: the longest input when the command line gives no ``-max_len``
MAX_LEN = 4096


def _load() -> None:
    import dcpinspect.families.redis.replication.resp  # noqa: F401
    import dcpinspect.families.redis.replication.session  # noqa: F401


def main() -> None:
    import resp_harness

    fuzz(_load, lambda: resp_harness.check_resp, MAX_LEN)


if __name__ == "__main__":
    main()
