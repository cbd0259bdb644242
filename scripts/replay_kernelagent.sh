#!/bin/bash
# KernelAgent's published searches replayed with our tuner beside them, then our final kernel timed
# against KernelAgent's published one, max-autotune and eager in one bench (issue 23, part 2).
#   bash scripts/replay_kernelagent.sh KA_DIR OUT_DIR [PROBLEM ...]
# KA_DIR: a copy of kaiming-cheng/kernelagent-optimization-artifacts (its problem folders, each with
# input_kernel.py, optimization_trace/ and optimized_kernel_beam_search.py). Default problems: the five.
# Each search starts from KernelAgent's input_kernel.py and re-proposes its rounds' kernels (--replay);
# the kernels of its that enter the beam also get knob variants (portfolio rounds). The compiler seed is
# left out, so the comparison is of the model's ideas with and without our tuning. Where our verifier
# refuses KernelAgent's input kernel (36's writes its result into its input), the search starts from
# the problem's bundled input kernel instead, and the log says so. RUN_ARGS adds options to every
# search (say "--rounds 4"); LIMIT_S bounds each search (default 400 s; leave room after a
# --budget-minutes for the final re-timing, about 25 s on a GPU, or the search writes no final kernel).
# Writes OUT_DIR/<problem>/ (the run), <problem>.log, <problem>.bench.json and OUT_DIR/replays.txt.
set -u
usage() {
  echo "usage: [LIMIT_S=400] [RUN_ARGS=...] bash scripts/replay_kernelagent.sh KA_DIR OUT_DIR [PROBLEM ...]"
  sed -n '2,14s/^# \{0,1\}//p' "$0"
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [ $# -lt 2 ]; then usage >&2; exit 2; fi
KA=$1; OUT=$2; shift 2
PROBLEMS=${*:-04_Matrix_vector_multiplication 36_RMSNorm 43_Max_Pooling_3D \
82_conv_depthwise_2D_square_input_square_kernel \
77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__}
LIMIT_S=${LIMIT_S:-400}
mkdir -p "$OUT"
: > "$OUT/replays.txt"
search() {  # $1: the problem, $2: its starting kernel
  rm -rf "${OUT:?}/$1"
  # shellcheck disable=SC2086  # RUN_ARGS is a list of options
  timeout -s INT "$LIMIT_S" python -m beamsearch.run --problem "$1" --kernel "$2" --replay "$KA/$1" \
    --no-compiler-seed --baselines "" --quiet --out "$OUT/$1" ${RUN_ARGS:-} >> "$OUT/$1.log" 2>&1
}
for p in $PROBLEMS; do
  : > "$OUT/$p.log"
  search "$p" "$KA/$p/input_kernel.py"
  if grep -q "the starting kernel cannot be the search's first parent" "$OUT/$p.log"; then
    echo "KernelAgent's input kernel was refused (above); starting from the bundled input kernel" >> "$OUT/$p.log"
    search "$p" "artifacts/$p/input_kernel.py"
  fi
  echo "== $p: $(grep -E '"event": "finish"|^error' "$OUT/$p.log" | tail -n 1 | cut -c1-300)" >> "$OUT/replays.txt"
  kernels=()
  for k in "$OUT/$p/optimized_kernel_beam_search.py" "$KA/$p/optimized_kernel_beam_search.py"; do
    if [ -f "$k" ]; then kernels+=("$k"); else echo "   no $k (see $p.log; a search cut at LIMIT_S=$LIMIT_S s" \
      "before its final re-timing leaves none)" >> "$OUT/replays.txt"; fi
  done
  kernel_args=()
  for k in ${kernels[@]+"${kernels[@]}"}; do kernel_args+=(--kernel "$k"); done
  python -m beamsearch.bench --problem "$p" --json --baselines eager,compile-max-autotune \
    ${kernel_args[@]+"${kernel_args[@]}"} > "$OUT/$p.bench.json" 2>> "$OUT/$p.log" || true
  [ -s "$OUT/$p.bench.json" ] || continue  # the bench failed before it timed anything: its log says why
  python - "$OUT/$p.bench.json" >> "$OUT/replays.txt" 2>&1 <<'EOF'
import json, sys
for row in json.load(open(sys.argv[1]))["rows"]:
    timing = row.get("timing") or {}
    ms = (timing.get("timing") or {}).get("median_ms")
    name = row["target"] if row["target"].endswith(".py") else row["label"]
    print(f"   {name}: {f'{ms:.4f} ms' if ms else (row.get('verdict') or timing).get('status', 'not timed')}")
EOF
done
cat "$OUT/replays.txt"
