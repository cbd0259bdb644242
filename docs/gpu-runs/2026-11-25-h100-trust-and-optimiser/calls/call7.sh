#!/bin/bash
# Dev set GELU again with the default of four workers per GPU: search against the full sweep of its space
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 580 python scripts/devset_eval.py --out $OUT/ev --problems 26_GELU_ --stages search sweep \
  --search-args "--budget-minutes 2.5" --cap-minutes search=4 sweep=5 --deadline-minutes 9.4 2>&1 | tail -12
for d in search sweep; do python scripts/search_stats.py $OUT/ev/26_GELU_/$d 2>&1 | grep -A1 "┡" | tail -1 | cut -c1-200; done
cd $OUT && tar czf ev.tgz --exclude='candidates' ev && rm -rf ev
