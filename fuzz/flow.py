"""atheris campaign for RESP with a Dragonfly flow (fuzz/redis_harness.py, ``check_flow``),
with fuzz/campaign.py's defaults; seeds: fuzz/make_corpus.py's.

    python3 fuzz/flow.py -atheris_runs=1000000 fuzz/corpus/flow
"""

from campaign import redis_main

if __name__ == "__main__":
    redis_main("redis_harness", "check_flow", ("dcpinspect.families.redis.replication.session", "dcpinspect.families.redis.dragonfly.dfs"))
