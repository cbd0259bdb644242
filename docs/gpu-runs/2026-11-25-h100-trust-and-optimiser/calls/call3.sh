#!/bin/bash
# The mission's command with the new offline optimiser (defaults), on one H100
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
mkdir -p $OUT/r
start=$(date +%s)
timeout -s INT 560 python -m beamsearch.run --problem 43_Max_Pooling_3D --workers 4 --rounds 8 --quiet > $OUT/r/run43.log 2> $OUT/r/run43.err
echo "rc=$? wall_s=$(( $(date +%s) - start ))"
R=$(ls -d runs/43_Max_Pooling_3D/*/ | tail -1); echo "run folder $R"
grep -E '"event": "(round_end|stop|finish|baseline)"' $OUT/r/run43.log | cut -c1-300
python scripts/search_stats.py $R 2>&1 | tail -8
python -c "import json,sys; s=json.load(open('$R/summary.json')); print({k: s.get(k) for k in ['best_ms','input_ms','speedup_vs_input','speedup_vs_compile','candidates','candidates_ok','wall_s','stop_reason','pct_of_floor']})"
tail -3 $OUT/r/run43.err
cp $R/summary.json $OUT/r/ 2>/dev/null; cp $R/state.json $OUT/r/ 2>/dev/null
cd $OUT && tar czf run43.tgz r && rm -rf r
