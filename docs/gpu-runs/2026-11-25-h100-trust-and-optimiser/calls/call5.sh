#!/bin/bash
# Dev set (issue 22): search vs sweep vs max-autotune, side by side, GELU and LogSoftmax
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 585 python scripts/devset_eval.py --out $OUT/ev --problems 26_GELU_ 24_LogSoftmax --stages bench search sweep \
  --search-args "--budget-minutes 2.5" --cap-minutes bench=2 search=3 sweep=3 --deadline-minutes 9.6 2>&1 | tail -25
cd $OUT && find ev -name '*.json' -path '*summary*' | head; tar czf ev.tgz --exclude='candidates' ev && rm -rf ev
