#!/bin/bash
# Thread scaling of TPC-H SF 1: over CSV at 16, 8, 4, 2 and 1 threads, then in memory at 16
# and 1, one file of runner output per configuration in $OUT (default: ./scaling-out).
#
#   benches/scaling.sh                      # builds and runs the runner through cargo
#   benches/scaling.sh path/to/tpch-binary  # a prebuilt runner (e.g. copied to another machine)
#
# Run from the repository root (the runner reads tests/tpch/queries). Data goes to $DATA
# (default /tmp/sf1) and is generated on first use.
set -u
OUT=${OUT:-scaling-out}
DATA=${DATA:-/tmp/sf1}
mkdir -p "$OUT"
if [ $# -ge 1 ]; then
  run() { "$1" "${@:2}"; }
  BIN=$1
else
  run() { shift; cargo bench --bench tpch -- "$@"; }
  BIN=cargo
fi
{ echo "cores: $(nproc)"; lscpu | grep -E "Model name|Thread|Core|Socket|L3"; } > "$OUT/machine.txt" 2>/dev/null
start=$(date +%s)
for t in 16 8 4 2 1; do
  run "$BIN" --sf 1 --mode csv --threads $t --runs 1 --data "$DATA" > "$OUT/csv_t$t.csv" 2>&1
  echo "csv t=$t done at $(( $(date +%s) - start )) s" >> "$OUT/progress.txt"
done
for t in 16 1; do
  run "$BIN" --sf 1 --mode memory --threads $t --runs 3 --data "$DATA" > "$OUT/mem_t$t.csv" 2>&1
  echo "memory t=$t done at $(( $(date +%s) - start )) s" >> "$OUT/progress.txt"
done
