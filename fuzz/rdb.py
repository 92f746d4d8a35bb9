"""atheris campaign for the RDB decoder (fuzz/rdb_harness.py, ``check_rdb``), with
fuzz/campaign.py's defaults; seeds: the rdb-librdb corpus files.

    python3 fuzz/rdb.py -atheris_runs=1000000 fuzz/corpus/rdb
"""

from campaign import redis_main

if __name__ == "__main__":
    redis_main("rdb_harness", "check_rdb", ("dcpinspect.families.redis.rdb", "dcpinspect.families.redis.report"))
