#!/bin/bash
# Device calls of this session (not committed). bash .gpurun/s.sh A|B|C
set -u
OUT=${OUT:-/tmp/out}; RUNS=$OUT/runs; mkdir -p "$RUNS"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > "$OUT/gpus.txt"
COMMON="--problem 43 --beam-width 4 --directions 8 --baselines eager --quiet"
search() {  # name limit [extra args...]
  local name=$1 limit=$2; shift 2
  local WORKERS=${WORKERS:-4}
  python scripts/host_load.py "$RUNS/$name.load.jsonl" & local sampler=$!
  timeout -s INT "$limit" python -m beamsearch.run $COMMON --rounds "${ROUNDS:-3}" --workers "$WORKERS" --out "$RUNS/$name" "$@" \
      > "$RUNS/$name.console.jsonl" 2>&1
  echo "$name rc=$? $(date +%T)"; kill $sampler
  tail -n 1 "$RUNS/$name.console.jsonl" | cut -c1-300
}
case $1 in
A)
  search screen-1 270
  search full-1 270 --no-screen
  ;;
B)
  search full-2 270 --no-screen
  search screen-2 270
  ;;
C)
  timeout 200 python -m pytest -q -m gpu tests/test_timing.py tests/test_verify_gpu.py > "$OUT/pytest_gpu.log" 2>&1; tail -n 3 "$OUT/pytest_gpu.log"
  WORKERS=6 search screen-6-workers 230
  COMMON="--problem 43 --quiet"; ROUNDS=8 search eight-by-four 200
  ;;
E)
  search screen-fixed 270
  timeout 250 python -m pytest -q -m gpu tests/test_verify_gpu.py -k "screen or good_kernels or dies or spins or gives" > "$OUT/pytest_gpu_timing.log" 2>&1; tail -n 3 "$OUT/pytest_gpu_timing.log"
  COMMON="--problem 43 --quiet"; ROUNDS=8 search eight-by-four-fixed 200
  ;;
esac
python scripts/search_stats.py $(ls -d $RUNS/*/) --steps > "$OUT/throughput.txt" 2>&1; head -c 6000 "$OUT/throughput.txt"
tar -czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$RUNS"
