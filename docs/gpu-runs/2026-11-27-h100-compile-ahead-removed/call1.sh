#!/bin/bash
# Next session, call 1 (H100): the committed compile ahead (a confined runner per job) on a GPU. Its GPU test;
# then one-minute searches of the matmul and 43 from their inputs, 631e484 (.gpu/old) then HEAD, each with its
# own Triton cache.
# PREDICTIONS (written 2026-11-27 15:35 before the run):
# - test_precompile's GPU test passes (the runner starts CUDA before it confines itself); all 30 of
#   test_verify_gpu pass with PYTHONSAFEPATH=1.
# - matmul: old ~180/min, new ~200/min (1.08-1.15x); >=30% of new's variants show a compile pass < 0.05 s.
# - 43: old ~75/min, new ~77/min: within run-to-run noise (round 1 is never compiled ahead; only round 2's
#   8 tasks can be). No warning 'compile ahead stopped' in either new log.
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=/tmp/n1; mkdir -p $R
ROOT=$(pwd)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
timeout 150 python -m pytest -v -m gpu tests/test_precompile.py tests/test_verify_gpu.py -p no:cacheprovider -x > $R/tests.txt 2>&1
echo "tests rc=$? $(( $(date +%s) - T0 )) s" | tee -a $R/runs.txt
(cd /tmp && tar czf $OUT/n1-tests.tgz n1/*.txt)
search() {  # V P extra-args...
  V=$1; P=$2; shift 2
  D=$ROOT; [ $V = old ] && D=$ROOT/.gpu/old
  t0=$(date +%s)
  (cd $D && TRITON_CACHE_DIR=$R/tc-$V-$P timeout 150 python -m beamsearch.run --problem $P "$@" --quiet --out $R/$V-$P > $R/$V-$P.log 2>&1)
  echo "$V $P $* rc=$? $(( $(date +%s) - t0 )) s" | tee -a $R/runs.txt
  rm -rf $R/tc-$V-$P
  python scripts/search_stats.py $R/$V-$P --steps > $R/$V-$P.stats.txt 2>&1
  python .gpu/s27/first.py $R/$V-$P > $R/$V-$P.first.txt 2>&1
  (cd /tmp && tar czf $OUT/n1-$V-$P.tgz --exclude='*.py' --exclude='*.png' --exclude='ncu*' --exclude='tc-*' n1/$V-$P n1/$V-$P.* n1/runs.txt)
}
for P in 2_Standard_matrix_multiplication_ 43_Max_Pooling_3D; do
  for V in old new; do
    [ $(left 580) -gt 130 ] && search $V $P --no-compiler-seed --baselines eager --budget-minutes 1.0
  done
done
cat $R/runs.txt; grep -h "passed\|failed" $R/tests.txt | tail -3
