#!/usr/bin/env bash
# The foundation issue's GPU evidence, in one device call. Run from the checkout root on the GPU machine:
#   source .devpack/activate.sh && bash scripts/gpu_foundation.sh PART
# PART 1: environment, GPU tests, verify + bench of our five input kernels at full size.
# PART 2: KernelAgent's published kernels (copied to .ka/NN/, kept out of the repo): bench, our clock
#         against triton.testing.do_bench, and the harness overhead per candidate.
# PART 3: after a clock change: GPU timing tests, the do_bench cross-check and the overhead again.
set -uo pipefail
# Results go to a scratch folder, packed into one archive under $OUT at the end (the device tool
# returns at most 8 files).
FINAL=${OUT:-/tmp/out}; OUT=$(mktemp -d); mkdir -p "$FINAL"
trap 'tar -czf "$FINAL/part${PART}.tgz" -C "$OUT" .' EXIT
export PYTHONUNBUFFERED=1
PROBLEMS="04 36 43 77 82"
PART=${1:-1}
if [ "$PART" = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/env.txt"
  python -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/env.txt"
  python -m pytest -q -m gpu tests/test_verify_gpu.py 2>&1 | tail -15 | tee "$OUT/pytest_gpu.txt"
  for p in $PROBLEMS; do
    python -m beamsearch.verify --problem "$p" | tail -2
    python -m beamsearch.bench --problem "$p" --json > "$OUT/bench_$p.json" 2>"$OUT/bench_$p.log"
    python -c "from rich.console import Console; from beamsearch.bench import render_report; from beamsearch.schema import BenchReport; render_report(BenchReport.model_validate_json(open('$OUT/bench_$p.json').read()), Console(width=150))"
  done
elif [ "$PART" = 3 ]; then
  python -m pytest -q -m gpu tests/test_verify_gpu.py -k "good or illegal" 2>&1 | tail -3
  for p in $PROBLEMS; do
    python scripts/compare_do_bench.py "$p" artifacts/$p*/input_kernel.py .ka/$p/optimized_kernel_beam_search.py --json "$OUT/dobench_$p.json"
  done
  python scripts/harness_overhead.py --json "$OUT/overhead.json"
else
  for p in $PROBLEMS; do
    python -m beamsearch.bench --problem "$p" --baselines eager --kernel .ka/$p/input_kernel.py .ka/$p/optimized_kernel_beam_search.py --json > "$OUT/ka_bench_$p.json" 2>"$OUT/ka_bench_$p.log"
    python -c "from rich.console import Console; from beamsearch.bench import render_report; from beamsearch.schema import BenchReport; render_report(BenchReport.model_validate_json(open('$OUT/ka_bench_$p.json').read()), Console(width=150))"
    python scripts/compare_do_bench.py "$p" .ka/$p/optimized_kernel_beam_search.py --json "$OUT/dobench_$p.json"
  done
  python scripts/harness_overhead.py --json "$OUT/overhead.json"
fi
