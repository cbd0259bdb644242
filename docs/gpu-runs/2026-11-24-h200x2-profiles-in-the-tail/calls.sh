#!/bin/bash
# Device calls of this session (not committed). bash .gpurun/x2.sh A|B
set -u
OUT=${OUT:-/tmp/out}; RUNS=$OUT/runs; mkdir -p "$RUNS"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > "$OUT/gpus.txt"
COMMON="--problem 43 --beam-width 4 --directions 8 --rounds 3 --baselines eager --quiet"
search() {  # name code-dir limit workers [env...]
  local name=$1 code=$2 limit=$3 workers=$4; shift 4
  python scripts/host_load.py "$RUNS/$name.load.jsonl" & local sampler=$!
  ( cd "$code" && env "$@" PYTHONPATH="$PWD:${PYTHONPATH:-}" timeout -s INT "$limit" python -m beamsearch.run $COMMON \
      --workers "$workers" --out "$RUNS/$name" > "$RUNS/$name.console.jsonl" 2>&1 )
  echo "$name rc=$? $(date +%T)"; kill $sampler
  tail -n 2 "$RUNS/$name.console.jsonl" | cut -c1-300
}
case $1 in
C1)
  search one-gpu . 260 4 CUDA_VISIBLE_DEVICES=0
  search two-gpu . 180 8
  timeout 100 python -m pytest -q -m gpu tests/test_ncu.py > "$OUT/pytest_ncu.log" 2>&1; tail -n 3 "$OUT/pytest_ncu.log"
  ;;
D)
  search one-gpu . 230 4 CUDA_VISIBLE_DEVICES=0
  search two-gpu . 160 8
  ;;
E)
  search one-gpu-profilers . 215 4
  search one-gpu-tail .gpurun/prev 215 4
  ;;
C2)
  search one-gpu-old .gpurun/old 260 4 CUDA_VISIBLE_DEVICES=0
  search two-gpu-old .gpurun/old 180 8
  ;;
esac
tar -czf "$OUT/runs.tgz" -C "$OUT" runs && rm -rf "$RUNS"
