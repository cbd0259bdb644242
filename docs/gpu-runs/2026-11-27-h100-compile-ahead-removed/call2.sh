#!/bin/bash
# Call 2 (H100): is the committed compile ahead (11e9f95, .gpu/head) slower than the code without it (the
# working tree: the compile ahead deleted)? Call 1 on one H100: 631e484 220.4/min, 11e9f95 134.4/min on the
# matmul. Two alternating pairs of one-minute matmul searches, each with its own Triton cache.
# PREDICTIONS (written before the run):
# - without (working tree) ~200-220/min both times; with (head) ~130-150/min both times: with < without in
#   both pairs by >= 25 %.
# - every run finds a best within 3 % of the others' (0.20-0.21 ms class).
source .devpack/activate.sh
export PYTHONUNBUFFERED=1
T0=$(date +%s)
R=/tmp/n2; mkdir -p $R
ROOT=$(pwd)
left() { echo $(( $1 - ($(date +%s) - T0) )); }
search() {  # V P tag extra-args...
  V=$1; P=$2; G=$3; shift 3
  D=$ROOT; [ $V = head ] && D=$ROOT/.gpu/head
  t0=$(date +%s)
  (cd $D && TRITON_CACHE_DIR=$R/tc-$V-$G timeout 150 python -m beamsearch.run --problem $P "$@" --quiet --out $R/$V-$G > $R/$V-$G.log 2>&1)
  echo "$V $G $P $* rc=$? $(( $(date +%s) - t0 )) s" | tee -a $R/runs.txt
  rm -rf $R/tc-$V-$G
  python scripts/search_stats.py $R/$V-$G --steps > $R/$V-$G.stats.txt 2>&1
  python .gpu/s27/first.py $R/$V-$G > $R/$V-$G.first.txt 2>&1
}
M=2_Standard_matrix_multiplication_
for G in a b; do
  for V in without head; do
    [ $(left 590) -gt 125 ] && search $V $M $G --no-compiler-seed --baselines eager --budget-minutes 1.0
  done
done
(cd /tmp && tar czf $OUT/n2.tgz --exclude='*.py' --exclude='*.png' --exclude='ncu*' --exclude='tc-*' n2)
cat $R/runs.txt
for f in $R/*.stats.txt; do echo "$f $(sed -n 8p $f | tr -s ' ' | cut -c1-120)"; done
