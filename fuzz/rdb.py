"""atheris campaign for the RDB decoder (fuzz/rdb_harness.py, ``check_rdb``), with
fuzz/campaign.py's defaults; seeds: the rdb-librdb corpus files.

    python3 fuzz/rdb.py -atheris_runs=1000000 fuzz/corpus/rdb
"""

from campaign import fuzz

#: the longest input when the command line gives no ``-max_len``
MAX_LEN = 4096


def _load() -> None:
    import dcpinspect.families.redis.rdb.decoder  # noqa: F401
    import dcpinspect.families.redis.reports.report  # noqa: F401


def main() -> None:
    import rdb_harness

    fuzz(_load, lambda: rdb_harness.check_rdb, MAX_LEN)


if __name__ == "__main__":
    main()
