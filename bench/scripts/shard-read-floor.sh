#!/usr/bin/env bash
# Measures, with pgbench against one shard database of a running dev cluster, what a call's rows cost
# PostgreSQL before Thresher touches them: the native GROUP BY, the same rows read out whole, the
# partition-by-partition reads a leader issues (slot-range index scans), and the near-empty variants.
# Usage: bench/scripts/shard-read-floor.sh [DEV_DIR (default .thresher/dev)] [SHARD (default 1)] [SECONDS (default 5)]
set -euo pipefail
dir="${1:-.thresher/dev}"; shard="${2:-1}"; secs="${3:-5}"
endpoints="$dir/endpoints.json"
[ -f "$endpoints" ] || { echo "no $endpoints: start ./thresher dev first" >&2; exit 2; }
command -v pgbench >/dev/null || { echo "pgbench is missing (Debian: postgresql-contrib or postgresql-client)" >&2; exit 2; }
port=$(sed -n 's|.*"jdbc:postgresql://localhost:\([0-9]*\)/thresher_control.*|\1|p' "$endpoints" | head -1)
base="postgresql://thresher:thresher@127.0.0.1:$port"
shard_url="$base/thresher_shard_$shard"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
psql -At "$base/thresher_control" -c "SELECT slot_lo, slot_hi FROM partitions WHERE shard_id = $shard ORDER BY slot_lo" > "$work/ranges"
rows=$(psql -At "$shard_url" -c "SELECT count(*) FROM orders")
for filter in "" " WHERE amount < 0"; do
  name=$([ -z "$filter" ] && echo all || echo near-empty)
  echo "SELECT region, sum(amount), count(*) FROM orders$filter GROUP BY region;" > "$work/native-$name.sql"
  echo "SELECT region, amount FROM orders$filter;" > "$work/rows-$name.sql"
  : > "$work/partitions-$name.sql"
  while IFS='|' read -r lo hi; do
    echo "SELECT region, amount FROM orders WHERE thresher_slot BETWEEN $lo AND $hi${filter/ WHERE/ AND} LIMIT 4097;" >> "$work/partitions-$name.sql"
  done < "$work/ranges"
done
echo "shard $shard: $rows rows in $(wc -l < "$work/ranges") partitions; pgbench -M prepared, 1 client, ${secs} s each (text results)"
printf '%-40s %s\n' "query" "latency average"
for name in all near-empty; do
  for q in native rows partitions; do
    lat=$(pgbench -n -M prepared -f "$work/$q-$name.sql" -c 1 -T "$secs" "$shard_url" 2>&1 | sed -n 's/^latency average = //p')
    printf '%-40s %s\n' "$q ($name)" "$lat"
  done
done
