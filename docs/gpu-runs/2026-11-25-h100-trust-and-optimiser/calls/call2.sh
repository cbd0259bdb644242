#!/bin/bash
# Trust, after the cheaper input change: lock cost new vs 7d4ea0b, cheats both paths, adversarial rows; searcher sweep
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 100 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_new.json 2>&1 | tail -7
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 100 python scripts/lock_cost.py 36_RMSNorm 43_Max_Pooling_3D 04_Matrix_vector_multiplication --pairs 2 --json $OUT/lock_old.json 2>&1 | tail -7)
timeout 150 python scripts/timed_cheats.py --shapes full --paths bench,search --json $OUT/cheats_new.json 2>&1 | grep -v "^ " | tail -8
(cd .old && PYTHONPATH=$PWD:$PYTHONPATH timeout 100 python scripts/timed_cheats.py --shapes full --paths bench --kernels "$OLDPWD/tests/data/kernels/adversarial" --json $OUT/cheats_old.json 2>&1 | grep -v "^ " | tail -6)
timeout 200 python scripts/adversarial_gpu.py --out $OUT/adv --only time: search: 2>&1 | tail -30
timeout 150 python -m scripts.searcher_gpu --json $OUT/searcher_gpu.json > $OUT/searcher_gpu.log 2>&1; tail -25 $OUT/searcher_gpu.log
cd $OUT && tar czf adv.tgz adv && rm -rf adv
