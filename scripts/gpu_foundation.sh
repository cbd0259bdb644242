#!/usr/bin/env bash
# The foundation issue's GPU evidence. Run from the checkout root on the GPU machine:
#   source .devpack/activate.sh && bash scripts/gpu_foundation.sh PART
# PART bench:    environment; verify + bench of the five input kernels at full size, side by side with
#                KernelAgent's published input and optimized kernels where .ka/NN/ holds them (copied
#                from its public artifacts repository, kept out of ours).
# PART dobench:  our clock against triton.testing.do_bench on the same kernels and inputs.
# PART overhead: the harness's overhead per candidate (scripts/harness_overhead.py).
# PART tests:    the GPU tests (pytest -m gpu).
# PART floorcheck: peaks with the read stream, and bench of the tuner's best matvec against the floor.
# PART profile:  measured peaks (python -m profiling.peaks), ncu profiles of the five input kernels with
#                roofline and floor (scripts/profile_inputs.py), the profiling GPU tests, one bench with
#                the floor column.
# Results go to a scratch folder, packed into one archive under $OUT (the device tool returns <= 8 files).
set -uo pipefail
PART=${1:-bench}
FINAL=${OUT:-/tmp/out}; OUT=$(mktemp -d); mkdir -p "$FINAL"
trap 'tar -czf "$FINAL/$PART.tgz" -C "$OUT" .' EXIT
export PYTHONUNBUFFERED=1
PROBLEMS="04 36 43 77 82"
render() { python -c "from rich.console import Console; from beamsearch.bench import render_report; from beamsearch.records.schema import BenchReport; render_report(BenchReport.model_validate_json(open('$1').read()), Console(width=150))"; }
case "$PART" in
bench)
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/env.txt"
  python -c "import sys, torch, triton; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)" | tee -a "$OUT/env.txt"
  for p in $PROBLEMS; do
    python -m beamsearch.verify --problem "$p" | tail -1
    ka=$(ls .ka/$p/input_kernel.py .ka/$p/optimized_kernel_beam_search.py 2>/dev/null)
    python -m beamsearch.bench --problem "$p" --kernel artifacts/$p*/input_kernel.py $ka --json > "$OUT/bench_$p.json" 2>"$OUT/bench_$p.log"
    render "$OUT/bench_$p.json"
  done ;;
dobench)
  for p in $PROBLEMS; do
    python scripts/compare_do_bench.py "$p" artifacts/$p*/input_kernel.py $(ls .ka/$p/optimized_kernel_beam_search.py 2>/dev/null) --json "$OUT/dobench_$p.json"
  done ;;
overhead)
  python -X importtime -c "import workers.harness.verify_child" 2>&1 | sort -t'|' -k2 -n -r | head -4
  python scripts/harness_overhead.py --json "$OUT/overhead.json" ;;
tests)
  python -m pytest -q -m gpu 2>&1 | tail -15 | tee "$OUT/pytest_gpu.txt" ;;
floorcheck)
  # The read-bandwidth ceiling against the tuner's best matvec (regenerated: the tuner is deterministic).
  python -m profiling.peaks --json > "$OUT/peaks.json" && python -m profiling.peaks
  python - "$OUT" <<'PY'
import sys
from pathlib import Path
from beamsearch.records.problems import resolve_problem
from beamsearch.records.schema import Diagnosis, Kernel, Roofline
from workers.proposers.tuner import TunerProposer
src = Path(resolve_problem("04").input_kernel_path).read_text()
roof = Roofline(compute_sol_pct=17.7, memory_sol_pct=60.9, bottleneck="memory", at_roofline=False,
                underutilized_below_pct=60, at_roofline_pct=90)
props = TunerProposer(per_call=16).propose(Kernel(source=src, origin="input"), Diagnosis(bottlenecks=[], source="rules", roofline=roof), [])
best = next(k for k in props if k.note.startswith("BLOCK_K 512 -> 2048, num_warps 4 -> 8"))
Path(sys.argv[1], "tuned_04.py").write_text(best.source)
PY
  python -m beamsearch.bench --problem 04 --kernel artifacts/04*/input_kernel.py "$OUT/tuned_04.py" $(ls .ka/04/optimized_kernel_beam_search.py 2>/dev/null) --json > "$OUT/bench_04.json"
  render "$OUT/bench_04.json" ;;
profile)
  which ncu; ncu --version | tail -1
  python -m profiling.peaks --json > "$OUT/peaks.json" && python -m profiling.peaks
  python scripts/profile_inputs.py --json "$OUT/profiles.json"
  python -m beamsearch.profile --problem 43 | tee "$OUT/profile_43.txt"
  python -m pytest -q -m gpu tests/test_ncu.py tests/test_gpu_specs.py 2>&1 | tail -5
  python -m beamsearch.bench --problem 36 --kernel artifacts/36*/input_kernel.py $(ls .ka/36/optimized_kernel_beam_search.py 2>/dev/null) ;;
esac
