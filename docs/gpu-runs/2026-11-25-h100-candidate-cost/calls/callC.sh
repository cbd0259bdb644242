#!/bin/bash
# Call C: (1) do four verifications' checks overlap (places vs the GPU's use lock)? (2) the dev-set
# matmul side by side: the search, a sweep of the same space, and max-autotune.
# Predictions: matmul input ~1.1 ms, search best 0.20-0.23 ms, max-autotune ~0.17 ms (search 0.75-0.85x of it).
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 70 python .gpu/slots_probe.py 2>&1 | grep -v Warning | tail -14
timeout 480 python scripts/devset_eval.py --out $OUT/ev --problems 2_Standard_matrix_multiplication_ --stages bench search sweep \
  --search-args "--budget-minutes 2" --cap-minutes bench=2 search=3 sweep=2.5 --deadline-minutes 7.9 2>&1 | tail -12
python .gpu/rate.py $OUT/ev/2_Standard_matrix_multiplication_/search $OUT/ev/2_Standard_matrix_multiplication_/sweep
python scripts/search_stats.py $OUT/ev/2_Standard_matrix_multiplication_/search $OUT/ev/2_Standard_matrix_multiplication_/sweep 2>&1 | grep -A3 "┡" | cut -c1-260
cd $OUT && tar czf ev.tgz --exclude='*.py' --exclude='*ncu*' ev && rm -rf ev
