"""The GPU's use lock: every GPU job of any search shares it, a measurement (``gpu_lock``) takes it alone.
Separate processes contend here as two searches on one node would; only the GPU's name is made up (no
CUDA on this machine), the flocks are the real ones."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workers.harness import gpu_lock as locks
from workers.harness.gpu_lock import gpu_in_use, gpu_lock

ROOT = Path(__file__).resolve().parent.parent
FAKE_GPU = "gpu-test-0000"

# One process: hold a shared use or a measurement for ``hold_s`` seconds; print when it held it.
JOB = """
import json, sys, time
from pathlib import Path
from workers.harness import gpu_lock as locks
locks.device_key = lambda device: {gpu!r}
locks._gpu_visible = lambda: True
kind, lock_dir, hold_s, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
take = locks.gpu_in_use if kind == "use" else locks.gpu_lock
Path(lock_dir, name + ".asked").touch()
asked = time.time()
with take("cuda", lock_dir) as waited_s:
    start = time.time()
    Path(lock_dir, name + ".held").touch()
    time.sleep(hold_s)
    end = time.time()
print(json.dumps(dict(kind=kind, asked=asked, start=start, end=end, waited_s=waited_s)))
"""


def _start(kind: str, lock_dir: Path, hold_s: float, name: str) -> subprocess.Popen:
    code = JOB.format(gpu=FAKE_GPU)
    return subprocess.Popen([sys.executable, "-c", code, kind, str(lock_dir), str(hold_s), name], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


def _held(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    return json.loads(out)


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(locks, "device_key", lambda device: FAKE_GPU)
    monkeypatch.setattr(locks, "_gpu_visible", lambda: True)


def test_a_measurement_waits_for_running_jobs_and_keeps_new_ones_out(tmp_path) -> None:
    """Two jobs share the GPU side by side; a measurement asked for meanwhile starts when both have ended,
    and a job asked for while it waits starts only after the measurement."""
    first = _start("use", tmp_path, 3.0, "first")
    _wait_for(tmp_path / "first.held")
    second = _start("use", tmp_path, 1.5, "second")
    _wait_for(tmp_path / "second.held")
    measure = _start("measure", tmp_path, 1.0, "measure")
    _wait_for(tmp_path / "measure.asked")
    time.sleep(0.2)  # it waits at the gate
    late = _start("use", tmp_path, 0.1, "late")
    first, second, measure, late = map(_held, (first, second, measure, late))
    assert max(first["start"], second["start"]) < min(first["end"], second["end"])  # side by side
    assert measure["asked"] < first["end"] and measure["start"] >= max(first["end"], second["end"])
    assert measure["waited_s"] == pytest.approx(measure["start"] - measure["asked"], abs=0.2)
    assert late["asked"] < measure["start"] and late["start"] >= measure["end"]


def test_a_job_waits_while_a_measurement_holds_the_gpu(tmp_path) -> None:
    measure = _start("measure", tmp_path, 1.5, "measure")
    _wait_for(tmp_path / "measure.held")
    job = _start("use", tmp_path, 0.1, "job")
    measure, job = _held(measure), _held(job)
    assert job["asked"] < measure["end"] <= job["start"]


def _held_by_someone(path: Path) -> bool:
    """Whether any open file holds ``path``'s flock (a fresh open file conflicts even in this process)."""
    with open(path, "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def test_a_process_measuring_sets_its_own_use_aside_and_takes_it_again(tmp_path, fake_gpu) -> None:
    """A verification holds its use of the GPU and then times: its measurement must not wait for itself
    (it would, forever), and inside it a nested use is no wait; afterwards its use is held again."""
    use = tmp_path / f"use-{FAKE_GPU}.lock"
    with gpu_in_use("cuda", str(tmp_path)), gpu_in_use("cuda", str(tmp_path)):
        assert _held_by_someone(use)
        start = time.perf_counter()
        with gpu_lock("cuda", str(tmp_path)) as waited_s:
            assert waited_s < 1.0 and time.perf_counter() - start < 1.0
            with gpu_in_use("cuda", str(tmp_path)) as nested_s:
                assert nested_s == 0.0
        assert _held_by_someone(use) and locks._SHARED[use][1] == 2  # held again, by both holders
    assert not _held_by_someone(use) and not locks._SHARED


def test_the_cpu_takes_no_use_lock(tmp_path) -> None:
    with gpu_in_use("cpu", str(tmp_path)) as waited_s, gpu_lock("cpu", str(tmp_path)):
        assert waited_s == 0.0
    assert not list(tmp_path.glob("use-*"))


def test_a_job_asking_for_a_gpu_where_none_is_visible_takes_no_lock_and_raises_nothing(tmp_path) -> None:
    """The job itself reports the missing GPU (``problem_error``), not the lock."""
    import torch

    with gpu_in_use("cuda", str(tmp_path)) as waited_s:
        assert waited_s < 1.0
    assert torch.cuda.is_available() or not list(tmp_path.glob("use-*"))


def test_a_process_forked_while_a_use_is_held_does_not_keep_the_gpu(tmp_path, fake_gpu) -> None:
    """A kernel imported into the timing child may fork; the fork shares the open lock file. The use the
    timing set aside must be free all the same, or the timing would wait for the fork (holding the
    measurement lock, so every search's timings with it)."""
    with gpu_in_use("cuda", str(tmp_path)):
        pid = os.fork()
        if pid == 0:  # the fork: outlives the use, holding its copy of the open file
            time.sleep(5)
            os._exit(0)
        try:
            start = time.perf_counter()
            with gpu_lock("cuda", str(tmp_path)) as waited_s:
                assert waited_s < 2.0 and time.perf_counter() - start < 2.0
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert not _held_by_someone(tmp_path / f"use-{FAKE_GPU}.lock")


def test_a_measurement_waits_for_a_job_that_never_ends_only_so_long(tmp_path, fake_gpu, monkeypatch) -> None:
    """A verification hung in its first call holds its use until its child's timeout: a measurement waits
    ``DRAIN_LIMIT_S`` for it and then measures beside it, still keeping new jobs out."""
    monkeypatch.setattr(locks, "DRAIN_LIMIT_S", 1.0)
    hung = _start("use", tmp_path, 30.0, "hung")
    try:
        _wait_for(tmp_path / "hung.held")
        with gpu_lock("cuda", str(tmp_path)) as waited_s:
            assert 1.0 <= waited_s < 5.0
            late = _start("use", tmp_path, 0.1, "late")
            _wait_for(tmp_path / "late.asked")
            time.sleep(0.5)
            assert not (tmp_path / "late.held").exists()  # the gate is still held
            ended = time.time()
        assert _held(late)["start"] >= ended
    finally:
        hung.kill()
        hung.wait()


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["timing child", "verification"])
def test_on_a_gpu_a_timing_waits_for_another_processs_gpu_job(path: str, tmp_path, monkeypatch) -> None:
    """The real children, the real GPU's name: a timing waits while another process (here, this one) uses
    the GPU, then measures and passes; the wait is in its lock_wait_s."""
    import threading

    from beamsearch.records.schema import RunSpec, TimingKnobs
    from tests.conftest import DATA, KERNELS
    from workers.harness.timing import time_target
    from workers.harness.verify import verify_kernel

    monkeypatch.setenv("BEAMSEARCH_LOCK_DIR", str(tmp_path))  # the children's locks too
    spec = RunSpec(
        problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda", dtype="bf16"
    )
    held = threading.Event()

    def other_job() -> None:
        with gpu_in_use("cuda"):
            held.set()
            time.sleep(12.0)  # the child starts and compiles in well under that

    job = threading.Thread(target=other_job)
    job.start()
    held.wait(30)
    if path == "timing child":
        timing = time_target(spec, str(KERNELS / "good.py"))
    else:
        timing = verify_kernel(spec, str(KERNELS / "good.py"), timing=TimingKnobs()).timing
    job.join()
    assert timing is not None and timing.status == "ok", timing
    assert timing.lock_wait_s > 2.0
