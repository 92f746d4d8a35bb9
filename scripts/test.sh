#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian machine, then run it.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tshark >/dev/null || need+=(tshark)
command -v memcached >/dev/null || need+=(memcached)
command -v redis-server >/dev/null || need+=(redis-server)  # real master→replica syncs, the judge of RDB files
command -v redis-check-rdb >/dev/null || need+=(redis-tools)  # the second judge of RDB files
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v memccapable >/dev/null || need+=(libmemcached-tools)
command -v xxd >/dev/null || need+=(xxd)
command -v hexdump >/dev/null || need+=(bsdextrautils)
command -v patchelf >/dev/null || need+=(patchelf)  # runs Debian 13's newer Redis beside the system (scripts/newer_redis.py)
command -v cc >/dev/null || need+=(gcc)  # builds the jsonl fast lane and the other C parts (setup.py)
# analyze runs on Spark, which needs Java 17 (or 21)
java -version 2>&1 | grep -E 'version "(17|21)[."]' >/dev/null || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing: ${need[*]}"
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections 2>/dev/null || true
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "not root: tests needing ${need[*]} will be skipped" >&2
  fi
fi

# The active virtual environment, or python3 when it takes packages; a Python that refuses
# them (Debian's own, PEP 668) gets a virtual environment of its own in .venv.
py=python3
stdlib="$(python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')"
if [ -z "${VIRTUAL_ENV:-}" ] && [ -e "$stdlib/EXTERNALLY-MANAGED" ]; then
  if ! python3 -c "import ensurepip" 2>/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  [ -x .venv/bin/python ] || python3 -m venv .venv
  py=.venv/bin/python
  export PATH="$PWD/.venv/bin:$PATH"
fi

"$py" -m pip install -q -e ".[test,plot,spark,query]"
"$py" -c "import dcpinspect.families.mcbp._lane, dcpinspect.families.redis.rdb._rdb, dcpinspect.families.redis.reports._prefixes, dcpinspect.sources._pcap, dcpinspect.outputs._jsonline" \
  || { echo "a C part (setup.py) did not build: its tests would be skipped" >&2; exit 1; }
# Redis 7.2 and later (listpack sets, hashes whose fields expire, RDB 11 and 12) and Valkey
# are judged by newer servers than Debian 12 has: Debian 13's, unpacked beside the system
# (scripts/newer_redis.py), unless DCPINSPECT_REDIS_72 and DCPINSPECT_VALKEY name them already.
if [ -z "${DCPINSPECT_REDIS_72:-}" ] && newer="$("$py" scripts/newer_redis.py redis)"; then
  export DCPINSPECT_REDIS_72="$newer"
fi
if [ -z "${DCPINSPECT_VALKEY:-}" ] && newer="$("$py" scripts/newer_redis.py valkey)"; then
  export DCPINSPECT_VALKEY="$newer"
fi
# Two worker processes (each test file in one of them, its real servers and Spark session its
# own); -n 0 after the command runs it in one process.
exec "$py" -m pytest -q -p no:cacheprovider -n 2 --dist loadfile "$@"
