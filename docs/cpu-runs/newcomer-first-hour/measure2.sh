set -u
cd /tmp/ci/main
source .venv/bin/activate
t3=$(date +%s)
python -m pytest -q --durations=25 > /tmp/ci/fast2.log 2>&1; echo "command 2 (fast) exit $? in $(( $(date +%s) - t3 )) s"; tail -1 /tmp/ci/fast2.log
t4=$(date +%s)
python -m pytest -q -m slow > /tmp/ci/slow2.log 2>&1; echo "slow exit $? in $(( $(date +%s) - t4 )) s"; tail -1 /tmp/ci/slow2.log
git status --short | head
