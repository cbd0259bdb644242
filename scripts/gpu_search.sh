#!/bin/bash
# GPU runs of the beam search for the committed results (see artifacts/README.md).
#   bash scripts/gpu_search.sh per-gpu "04 36 43 82" 8 4    # one problem per GPU, 4 workers sharing it
#   bash scripts/gpu_search.sh all-gpus "43" 8 4            # one problem, workers spread over all GPUs
# Each run writes its trace to $OUT/runs/<mode>-<problem>/ and its console to <...>.log; everything is
# packed into $OUT/<mode>.tgz (the device tool returns few files). LIMIT_S bounds each run (default 520 s);
# a run cut short keeps a consistent trace that `--resume` continues. Publish a finished run into
# artifacts/ with: python -m beamsearch.publish RUN_DIR [--force]
set -u
usage() {
  echo "usage: [LIMIT_S=520] [OUT=/tmp/out] bash scripts/gpu_search.sh per-gpu|all-gpus \"PROBLEM ...\" [ROUNDS] [WORKERS]"
  sed -n '2,8s/^# \{0,1\}//p' "$0"
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [ $# -lt 2 ]; then usage >&2; exit 2; fi
MODE=$1; PROBLEMS=$2; ROUNDS=${3:-8}; WORKERS=${4:-4}; LIMIT_S=${LIMIT_S:-520}
OUT=${OUT:-/tmp/out}; RUNS=$OUT/runs; mkdir -p "$RUNS"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader > "$RUNS/gpus-$MODE.txt"
i=0
for p in $PROBLEMS; do
  name=$MODE-$p
  if [ "$MODE" = per-gpu ]; then export CUDA_VISIBLE_DEVICES=$i; fi
  timeout -s INT "$LIMIT_S" python -m beamsearch.run --problem "$p" --out "$RUNS/$name" --rounds "$ROUNDS" \
    --workers "$WORKERS" --quiet > "$RUNS/$name.log" 2>&1 &
  i=$((i + 1))
  [ "$MODE" = per-gpu ] || wait
done
wait
unset CUDA_VISIBLE_DEVICES
for p in $PROBLEMS; do echo "== $MODE-$p"; tail -n 3 "$RUNS/$MODE-$p.log" | cut -c1-400; done
tar -czf "$OUT/$MODE.tgz" -C "$OUT" runs
