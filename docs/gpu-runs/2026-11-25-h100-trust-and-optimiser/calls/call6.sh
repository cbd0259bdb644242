#!/bin/bash
# Issue 20 hole 3: two searches of 43 on one H100 at once, new code, then 7d4ea0b (.old), same limits
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 280 python scripts/two_searches.py run --out /tmp/ts/new --limit-s 170 2>&1 | tail -12
timeout 280 python scripts/two_searches.py run --out /tmp/ts/old --limit-s 170 --tree .old 2>&1 | tail -12
cd /tmp && tar czf $OUT/ts.tgz --exclude=candidates ts
