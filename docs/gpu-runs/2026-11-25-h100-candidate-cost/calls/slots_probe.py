"""Four verifications at once with four places: do their checks overlap on the GPU?"""
import sys, threading, time, json
sys.path.insert(0, ".")
import filelock, torch
from beamsearch.schema import RunSpec, TimingKnobs, SEARCH_TIMING
from workers.verify import verify_kernel
print("filelock", filelock.__version__, "torch", torch.__version__)
spec = RunSpec(problem_path="tests/data/scale_rows_problem.py", shapes="full", device="cuda", dtype="bf16")
for slots, timed in ((4, True), (0, True), (4, False)):
    out = {}
    t0 = time.time()
    def job(i):
        out[i] = verify_kernel(spec, "tests/data/kernels/good.py", timing=TimingKnobs(**SEARCH_TIMING) if timed else None, slots=slots)
    ts = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    [t.start() for t in ts]; [t.join() for t in ts]
    for i, v in sorted(out.items()):
        st = v.steps_s
        print(slots, timed, i, v.passed, "start", round(v.started_at - t0, 2), {k: st[k] for k in ("slot_taken", "in_use", "seed0_checked", "seed2_checked", "timed", "runner_stopped") if k in st})
