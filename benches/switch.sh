#!/bin/bash
# A following server's RSS around a switch: `hydro serve` of ARCHIVE with follow_seconds = 1,
# then `hydro import --append --values VALUES` from outside; RSS and its peak (VmHWM) from
# /proc at start, 3 s and 13 s after the append, and after 200 station-list requests (the
# allocator gives freed pages back as its threads run again). ARCHIVE is appended to: use a
# hard-linked copy (`cp -al`). Builds to compare take turns on the same copy.
#
#   bash benches/switch.sh ARCHIVE VALUES BINARY [BINARY...]
set -euo pipefail
archive=$1 values=$2
shift 2
for bin in "$@"; do
  port=$((20000 + RANDOM % 10000))
  HYDRO_FOLLOW_SECONDS=1 HYDRO_LOG=${HYDRO_LOG:-warn} "$bin" serve --data "$archive" \
    --bind "127.0.0.1:$port" > /tmp/switch-serve.log 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/v1/health" > /dev/null; do sleep 0.1; done
  sleep 2
  rss() { echo "  $1: $(grep -E 'VmRSS|VmHWM|RssAnon' /proc/$pid/status | tr -s ' \t' ' ' | tr '\n' ' ')"; }
  echo "== $bin"
  rss start
  /usr/bin/time -f "  append: %e s, peak %M KB" "$bin" import --append --out "$archive" \
    --values "$values" 2>&1 | tail -1
  sleep 3; rss "3 s after"
  sleep 10; rss "13 s after"
  for i in $(seq 1 200); do
    curl -s -o /dev/null "http://127.0.0.1:$port/v1/stations?limit=5&offset=$i"
  done
  sleep 2; rss "after 200 requests"
  kill "$pid"; wait "$pid" 2> /dev/null || true
done
