#!/bin/bash
# Call 5 (H100): probe, not a change. Does the compile pass need a CUDA context? Each case in a fresh
# process with a fresh Triton cache: 'plain' (as the runner does it) and 'nostream' (Triton's
# get_current_stream replaced by 0 during the pass).
# PREDICTIONS (written before the run): cuInit alone ~0.1-0.3 s and no context; 'plain' makes a context
# (~500 MiB in nvidia-smi) at the pass; 'nostream' compiles the same kernels with no context (active=0,
# no nvidia-smi line), unless torch.cuda.current_device() makes one (then both make one at that step).
source .devpack/activate.sh
K=artifacts/2_Standard_matrix_multiplication_/input_kernel.py
for m in plain nostream; do
  echo "== $m"; TRITON_CACHE_DIR=/tmp/tc-$m timeout 120 python .gpu/s28/ctx_free.py $m $K 2>&1 | tail -20
done > $OUT/probe.txt 2>&1
cat $OUT/probe.txt
