#!/bin/bash
# A clean clone of the final commit, as a new user meets it: the README's two commands and the mission's.
set -u
step() { echo; echo "\$ $*"; local s=$(date +%s.%N); "$@"; local rc=$?; echo "[exit $rc, $(python3 -c "print(round($(date +%s.%N)-$s))") s]"; return $rc; }
rm -rf /tmp/clean && git clone -q /work/main /tmp/clean && cd /tmp/clean
echo "commit: $(git log --oneline -1)"
echo "tracked files: $(git ls-files | wc -l); checkout without .git: $(du -sh --exclude=.git . | cut -f1); .git: $(du -sh .git | cut -f1); clone in all: $(du -sh . | cut -f1)"
python3 -m venv .venv && source .venv/bin/activate && python -m pip install -q --upgrade pip >/dev/null 2>&1
step bash -c 'pip install -q torch==2.13.0 >/dev/null 2>&1 && pip install -q -e ".[dev]" >/dev/null 2>&1'
step python -m beamsearch.run --problem 43_Max_Pooling_3D --quiet
ls runs/43_Max_Pooling_3D/
step python -m beamsearch.run --problem 43_Max_Pooling_3D --workers 4 --rounds 8 --quiet
ls runs/43_Max_Pooling_3D/
echo "git status after the runs: '$(git status --short)'"
step timeout 3000 python -m pytest -q -p no:cacheprovider
echo "git status after the tests: '$(git status --short)'"
