"""atheris campaign for Dragonfly's journal reader (fuzz/redis_harness.py, ``check_journal``),
with fuzz/campaign.py's defaults; seeds: fuzz/make_corpus.py's.

    python3 fuzz/journal.py -atheris_runs=1000000 fuzz/corpus/journal
"""

from campaign import redis_main

if __name__ == "__main__":
    redis_main("redis_harness", "check_journal", ("dcpinspect.families.redis.replication.session", "dcpinspect.families.redis.dragonfly.dfs"))
