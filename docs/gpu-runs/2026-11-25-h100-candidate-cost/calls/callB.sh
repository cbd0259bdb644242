#!/bin/bash
# Call B: candidates a minute, old code (f32490c, .old/) against new (e4736b0), side by side, round 1 of
# the optimiser at full size, 4 workers, one H100. Predictions (written before the run):
#   GELU:   old ~9/min (verifications retried alone after running out of memory); new 30-45/min, none retried
#   matmul: old ~20/min (timings hold the lock 2.4 s); new 40-60/min
#   matmul, new, 8 workers: 1.2-1.5x the 4-worker rate
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R="--rounds 1 --baselines '' --quiet"
run() { local tree=$1 name=$2 lim=$3; shift 3; s=$(date +%s)
  (cd $tree && timeout $lim python -m beamsearch.run --rounds 1 --baselines "" --quiet --out $OUT/b/$name "$@" > $OUT/b/$name.log 2>&1); echo "$name rc=$? $(( $(date +%s) - s )) s"; }
mkdir -p $OUT/b
run .old gelu-old 130 --problem 26_GELU_
run . gelu-new 120 --problem 26_GELU_
run . mm-new 100 --problem 2_Standard_matrix_multiplication_
run .old mm-old 100 --problem 2_Standard_matrix_multiplication_
run . mm-new-8w 90 --problem 2_Standard_matrix_multiplication_ --workers 8
python .gpu/rate.py $OUT/b/gelu-old $OUT/b/gelu-new $OUT/b/mm-old $OUT/b/mm-new $OUT/b/mm-new-8w | tee $OUT/rates.txt
cd $OUT && tar czf b.tgz --exclude='*.py' --exclude='*ncu*' b && rm -rf b
