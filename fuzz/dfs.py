"""atheris campaign for Dragonfly's .dfs snapshot sets (fuzz/redis_harness.py, ``check_dfs``),
with fuzz/campaign.py's defaults; seeds: fuzz/make_corpus.py's.

    python3 fuzz/dfs.py -atheris_runs=1000000 fuzz/corpus/dfs
"""

from campaign import redis_main

if __name__ == "__main__":
    redis_main("redis_harness", "check_dfs", ("dcpinspect.families.redis.replication.session", "dcpinspect.families.redis.dragonfly.dfs"))
