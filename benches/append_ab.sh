#!/usr/bin/env bash
# Two builds take turns appending one day for every series of an archive (a hard-linked copy
# each time), or several days one after the other (DAY,DAY,...: each appended to the copy the
# day before went to): wall time, peak RSS and CPU from /usr/bin/time, the rollup step's
# seconds from the debug log, and the bytes of the rollup files the append wrote. Outside CI;
# needs pyarrow (benches/append.py lists the series).
#
#   bash benches/append_ab.sh OLD_HYDRO NEW_HYDRO ARCHIVE DAY[,DAY...] [ROUNDS]
#   e.g. bash benches/append_ab.sh /tmp/hydro-old /tmp/hydro-new /var/tmp/arch/a1000 2034-01-01
set -euo pipefail
old=$1 new=$2 archive=$3 days=$4 rounds=${5:-2}
work=$(mktemp -d /var/tmp/append-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$(dirname "$0")"
IFS=, read -r -a days <<< "$days"
for day in "${days[@]}"; do
  python3 -c "
import append, datetime
_, p = append.series_of('$archive')
d = datetime.datetime.fromisoformat('$day').replace(tzinfo=datetime.timezone.utc)
print('$day:', append.day_csv('$work/$day.csv', p, d, 0), 'rows')
"
done
for _ in $(seq "$rounds"); do
  for build in "$old" "$new"; do
    rm -rf "$work/dataset" && cp -al "$archive" "$work/dataset"
    for day in "${days[@]}"; do
      HYDRO_LOG=debug /usr/bin/time -v "$build" import --append --out "$work/dataset" \
        --values "$work/$day.csv" > /dev/null 2> "$work/log"
      generation=$(python3 -c "import json; print(json.load(open('$work/dataset/manifest.json'))['generation'])")
      # Rollup files as publishes before parts named them, and parts.
      rollup_bytes=$(find "$work/dataset/rollups" \( -name "part-$generation.parquet" -o \
        -name "*-g$generation.parquet" \) -print0 | xargs -0 cat | wc -c)
      echo "$build $day: $(grep -a 'rollups written' "$work/log" | grep -o 'seconds=[0-9.]*') \
$(grep -a -e 'Elapsed' -e 'Maximum resident' -e 'Percent of CPU' "$work/log" | sed 's/^\s*//' | tr '\n' ';') \
rollup bytes written $rollup_bytes"
    done
  done
done
