#!/bin/bash
# Device calls of this session (not committed). bash .gpurun/x2.sh A|B
set -u
OUT=${OUT:-/tmp/out}; RUNS=$OUT/runs; mkdir -p "$RUNS"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > "$OUT/gpus.txt"
COMMON="--problem 43 --beam-width 4 --directions 8 --baselines eager --quiet"
search() {  # name code-dir limit workers [env...]
  local name=$1 code=$2 limit=$3 workers=$4; shift 4
  python scripts/host_load.py "$RUNS/$name.load.jsonl" & local sampler=$!
  ( cd "$code" && env "$@" PYTHONPATH="$PWD:${PYTHONPATH:-}" timeout -s INT "$limit" python -m beamsearch.run $COMMON \
      --rounds "${ROUNDS:-3}" --workers "$workers" --out "$RUNS/$name" > "$RUNS/$name.console.jsonl" 2>&1 )
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
F)
  timeout 90 python scripts/ncu_idle_cost.py --spares 4 --settle-s 20 --window-s 10 > "$OUT/ncu_idle_cost.txt" 2>&1
  cat "$OUT/ncu_idle_cost.txt"
  ROUNDS=2; search one-gpu-warm-ncu . 130 4
  ROUNDS=2; search one-gpu-tail .gpurun/prev 130 4
  ;;
G)
  timeout 50 python scripts/ncu_idle_cost.py --spares 4 --settle-s 15 --window-s 8 > "$OUT/ncu_idle_cost.txt" 2>&1
  cat "$OUT/ncu_idle_cost.txt"
  ROUNDS=1; search one-gpu-warm-ncu-r1 . 110 4
  python - "$RUNS/one-gpu-warm-ncu-r1" <<'PY' | tee "$OUT/profile_steps.txt"
import json, sys
from pathlib import Path
for p in sorted(Path(sys.argv[1]).glob("optimization_trace/round_*/candidates/*/result.json")):
    r = json.loads(p.read_text()); pr = r.get("profile") or {}
    if pr and not pr.get("skipped"):
        print(r["task_id"], round(pr.get("duration_s", 0), 2), pr.get("steps_s"))
for p in sorted(Path(sys.argv[1]).glob("optimization_trace/round_*/round.json")):
    print(p.read_text()[:400])
PY
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
