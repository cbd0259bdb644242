#!/bin/bash
# Trust checks on the GPU: GPU tests, cheats and lock cost, new code beside 7d4ea0b (.old)
set -x
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
git log --oneline -1 2>/dev/null
timeout 200 python -m pytest -q -m gpu tests/test_gpu_lock.py tests/test_retime.py 2>&1 | tail -4
timeout 120 python -m pytest -q -m gpu tests/test_timing.py -k rebuilds 2>&1 | tail -3
timeout 100 python scripts/timed_cheats.py --shapes full --paths bench --json $OUT/cheats_new.json 2>&1 | tail -12
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 100 python scripts/timed_cheats.py --shapes full --paths bench --kernels "$OLDPWD/tests/data/kernels/adversarial" --json $OUT/cheats_old.json 2>&1 | tail -12)
timeout 90 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_new.json 2>&1 | tail -10
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 90 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_old.json 2>&1 | tail -10)
