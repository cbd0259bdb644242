#!/bin/bash
# Call A: where a candidate's time goes at full size (current code), and Inductor's own kernels recorded
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log --oneline -1
T0=$(date +%s)
for p in 26_GELU_ 24_LogSoftmax 2_Standard_matrix_multiplication_; do
  s=$(date +%s)
  timeout 110 python -m beamsearch.run --problem $p --rounds 1 --baselines "" --quiet --out $OUT/steps/$p > $OUT/steps_$p.log 2>&1
  echo "$p rc=$? $(( $(date +%s) - s )) s"; tail -3 $OUT/steps_$p.log
done
python scripts/search_stats.py $OUT/steps/* --steps > $OUT/steps_stats.txt 2>&1; tail -60 $OUT/steps_stats.txt | cut -c1-220
for p in 43_Max_Pooling_3D 36_RMSNorm 26_GELU_ 24_LogSoftmax 35_GroupNorm_ 48_Mean_reduction_over_a_dimension 41_Max_Pooling_1D 89_cumsum 2_Standard_matrix_multiplication_ 04_Matrix_vector_multiplication 82_conv_depthwise_2D_square_input_square_kernel; do
  left=$(( 560 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "no time for $p"; continue; }
  lim=$(( left < 100 ? left : 100 ))
  timeout $lim python scripts/record_inductor.py --problem $p --out $OUT/inductor > $OUT/inductor_$p.log 2>&1; echo "$p rc=$? $(tail -1 $OUT/inductor_$p.log | cut -c1-200)"
done
cd $OUT && tar czf steps.tgz steps steps_*.log steps_stats.txt && rm -rf steps && tar czf inductor.tgz inductor inductor_*.log && rm -rf inductor inductor_*.log steps_*.log
