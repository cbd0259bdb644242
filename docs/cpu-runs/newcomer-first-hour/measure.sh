# A fresh `git clone` of the commit into /tmp/ci/main, with a copy of ../shared beside it; each step timed.
set -u
cd /tmp/ci/main
t0=$(date +%s)
python3 -m venv .venv && source .venv/bin/activate
python -m pip install -q --upgrade pip && python -m pip install -q torch==2.13.0 && python -m pip install -q -e ".[dev]"
t1=$(date +%s); echo "install: $((t1-t0)) s"
ruff check . && echo "ruff ok"
t2=$(date +%s)
python -m beamsearch.run --problem 43_Max_Pooling_3D > /tmp/ci/cmd1.out 2> /tmp/ci/cmd1.err; echo "command 1 exit $? in $(( $(date +%s) - t2 )) s"
t3=$(date +%s)
python -m pytest -q > /tmp/ci/fast.log 2>&1; echo "command 2 (fast) exit $? in $(( $(date +%s) - t3 )) s"; tail -1 /tmp/ci/fast.log
t4=$(date +%s)
python -m pytest -q -m slow > /tmp/ci/slow.log 2>&1; echo "slow exit $? in $(( $(date +%s) - t4 )) s"; tail -1 /tmp/ci/slow.log
ls /tmp/ci/main | grep -v -E "^(artifacts|beamsearch|docs|profiling|prompts|scripts|tests|workers|README.md|CONTRIBUTING.md|pyproject.toml|runs)$"
