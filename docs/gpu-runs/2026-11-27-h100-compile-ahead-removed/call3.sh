#!/bin/bash
# Call 3 (H100): at 2052158 (compile ahead removed; PYTHONSAFEPATH for children, untested on a GPU so far):
# the GPU verification tests in full, then the mission's command.
# PREDICTIONS (written before the run):
# - all of tests/test_verify_gpu.py and tests/test_compile_ahead.py -m gpu pass (31), in under 330 s.
# - mission command: exit 0, 32 candidates all ok, 95-105 a minute, final ~1.29 ms, ~1.04x
#   compile-max-autotune, 160-180 s.
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=/tmp/n3; mkdir -p $R
timeout 330 python -m pytest -v -m gpu tests/test_verify_gpu.py tests/test_compile_ahead.py -p no:cacheprovider > $R/tests.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/runs.txt
(cd /tmp && tar czf $OUT/n3-tests.tgz n3/*.txt)
t0=$(date +%s)
left=$(( 585 - (t0 - T0) ))
timeout $left python -m beamsearch.run --problem 43_Max_Pooling_3D --workers 4 --rounds 8 --out $R/mission > $R/mission.log 2>&1
echo "mission rc=$? $(( $(date +%s) - t0 )) s" | tee -a $R/runs.txt
python scripts/search_stats.py $R/mission --steps > $R/mission.stats.txt 2>&1
(cd /tmp && tar czf $OUT/n3-mission.tgz --exclude='*.py' --exclude='*.png' --exclude='ncu*' --exclude=optimization_trace n3)
cat $R/runs.txt; grep -h "passed\|failed" $R/tests.txt | tail -3; tail -3 $R/mission.log
