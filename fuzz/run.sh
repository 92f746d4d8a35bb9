#!/bin/sh
# Run the atheris campaigns one after another and print each one's execution count.
#
#   fuzz/run.sh -t SECONDS [ENTRY...]    each campaign for SECONDS
#   fuzz/run.sh -n RUNS [ENTRY...]       each campaign for RUNS executions
#
# ENTRY: hex frame pcap pcapng conversation render rdb journal dfs flow (all by default). Seeds are written
# by fuzz/make_corpus.py into fuzz/corpus/<entry> (kept between runs, growing), crashes
# into fuzz/artifacts/<entry>/, the log of each run into fuzz/artifacts/<entry>.log.
# Extra libFuzzer options: FUZZ_OPTS="-rss_limit_mb=1024 -timeout=30".
set -eu
cd "$(dirname "$0")/.."
limit=""
case "${1:-}" in
    -t) limit="-max_total_time=$2"; shift 2 ;;
    -n) limit="-atheris_runs=$2"; shift 2 ;;
    *) echo "usage: fuzz/run.sh -t SECONDS | -n RUNS [ENTRY...]" >&2; exit 2 ;;
esac
entries="${*:-hex frame pcap pcapng conversation render rdb journal dfs flow}"
[ -d fuzz/corpus ] || python3 fuzz/make_corpus.py >/dev/null
# campaign speed (fuzz/campaign.py): the commands on one input in 4096, the rich views on
# one in 64, the gzipped copy on one in 16 (by a hash of the input), memory bounded by
# -rss_limit_mb; the DCPINSPECT_FUZZ_* variables change each
status=0
for entry in $entries; do
    mkdir -p "fuzz/corpus/$entry" "fuzz/artifacts/$entry"
    # the RDB campaign starts from the public RDB files of tests/corpora (fuzz/rdb_harness.py)
    if [ "$entry" = rdb ] && [ -z "$(ls -A fuzz/corpus/rdb)" ]; then
        cp tests/corpora/rdb-librdb/*.rdb tests/corpora/redis-assets/*.rdb fuzz/corpus/rdb/
    fi
    log="fuzz/artifacts/$entry.log"
    python3 "fuzz/$entry.py" $limit -rss_limit_mb=2048 -timeout=60 ${FUZZ_OPTS:-} \
        -artifact_prefix="fuzz/artifacts/$entry/" "fuzz/corpus/$entry" >"$log" 2>&1 || status=1
    runs=$(sed -n 's/^Done \([0-9]*\) \(runs \)\{0,1\}in \([0-9]*\) second.*/\1 runs in \3 s/p' "$log" | tail -1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 | cut -c1-100)
    echo "$entry: ${runs:-stopped: $last}"
    grep -q 'ERROR: libFuzzer\|Uncaught Python exception' "$log" && echo "  found something: see $log and fuzz/artifacts/$entry/"
done
exit $status
