#!/usr/bin/env bash
# Capture real memcached binary-protocol traffic on loopback into samples/memcached-binary.pcap.
# Needs root, Debian's memcached, tcpdump and libmemcached-tools (memccapable).
set -euo pipefail
out="${1:-$(dirname "$0")/memcached-binary.pcap}"
port="${PORT:-22122}"
memcached -u root -l 127.0.0.1 -p "$port" -U 0 &
mc=$!
tcpdump -i lo -U -s 0 -w "$out" "tcp port $port" 2>/dev/null &
td=$!
trap 'kill $mc $td 2>/dev/null || true' EXIT
sleep 1
memccapable -b -h 127.0.0.1 -p "$port" >/dev/null 2>&1 || true
sleep 1
kill -INT $td; wait $td 2>/dev/null || true
echo "wrote $out"
