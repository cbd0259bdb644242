#!/bin/bash
# Trust, final code (sampled repetitions): sample cost, GPU tests, adversarial rows, cheats and lock cost beside 7d4ea0b
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 60 python scripts/sample_cost.py --json $OUT/sample_cost.json 2>&1 | tail -6
timeout 120 python -m pytest -q -m gpu tests/test_timing.py -k "redraws or rebuilds" 2>&1 | tail -2
timeout 100 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_new.json 2>&1 | tail -7
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 100 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_old.json 2>&1 | tail -7)
timeout 150 python scripts/timed_cheats.py --shapes full --paths bench,search --json $OUT/cheats_new.json 2>&1 | grep -v "^ " | tail -7
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 100 python scripts/timed_cheats.py --shapes full --paths bench --kernels "$OLDPWD/tests/data/kernels/adversarial" --json $OUT/cheats_old.json 2>&1 | grep -v "^ " | tail -7)
timeout 200 python scripts/adversarial_gpu.py --out $OUT/adv --only time: search: 2>&1 | tail -40
cd $OUT && tar czf adv.tgz adv && rm -rf adv
