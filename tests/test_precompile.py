"""A worker's background compile of the variant it will probably run next (``workers.actor.precompiler``,
``workers.harness.precompile_child``): the jobs, their process, what a bad kernel costs, and on a GPU that
the variant's own compile pass then finds its code in Triton's cache."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from pathlib import Path

import pytest

from beamsearch.config import SearchConfig
from beamsearch.driver import next_variant
from beamsearch.schema import Kernel, RunSpec
from beamsearch.state import BeamEntry, NextVariant, Task
from tests.conftest import DATA, KERNELS
from workers.actor.precompiler import Precompiler
from workers.harness.precompile_child import PrecompileResult

# On the CPU a runner compiles nothing ("not on a GPU"): these jobs test the processes around the pass.
LAUNCHES_NOTHING = "import torch\n\ndef kernel_function(x, weight):\n    return torch.empty_like(x)\n"
NOT_ON_A_GPU = "not on a GPU"


@pytest.fixture
def confined() -> None:
    """Nothing is compiled ahead where the runner cannot be confined (``test_no_compile_ahead_without_a_sandbox``)."""
    from workers.harness.sandbox import unavailable

    if why := unavailable():
        pytest.skip(why)


def _spec(device: str = "cpu") -> RunSpec:
    return RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device=device)


def _kernel(folder: Path, name: str, source: str) -> Path:
    path = folder / name / "kernel.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    return path


def _run(pre: Precompiler, folder: Path, jobs: list[tuple[str, str]]) -> list[PrecompileResult | str]:
    """Each job in turn, once the last has finished; what became of each."""
    for name, source in jobs:
        pre.submit(_spec(), _kernel(folder, name, source), seed=3, compile_limit_s=15)
        assert pre.wait_idle(180)
    return [r for _, r in list(pre.results)[-len(jobs):]]


def _stopped(outcomes: list[PrecompileResult | str]) -> list[str]:
    assert all(isinstance(r, PrecompileResult) for r in outcomes), outcomes
    return [r.stopped for r in outcomes]


def test_one_process_serves_job_after_job_each_in_a_fresh_runner(tmp_path, confined) -> None:
    marks = "import sys\nsys.marked_by_a_kernel = True\n" + LAUNCHES_NOTHING
    looks = "import sys\nassert not hasattr(sys, 'marked_by_a_kernel'), 'the last kernel ran here'\n" + LAUNCHES_NOTHING
    pre = Precompiler("cpu")
    try:
        stopped = _stopped(_run(pre, tmp_path, [("marks", marks), ("stops", "raise ValueError('no')\n"), ("looks", looks)]))
        assert stopped[0] == NOT_ON_A_GPU == stopped[2], stopped
        assert "ValueError: no" in stopped[1]
        assert pre.session.processes == 1
    finally:
        pre.close()
    assert pre.session.child is None


def test_a_kernel_that_ends_or_hangs_its_runner_costs_only_its_job(tmp_path, confined) -> None:
    pre = Precompiler("cpu")
    try:
        outcomes = _run(pre, tmp_path, [("exits", "import os\nos._exit(3)\n"),
                                        ("hangs", "import time\ntime.sleep(600)\n"), ("fine", LAUNCHES_NOTHING)])  # fmt: skip
        exits, hangs, fine = _stopped(outcomes)
        assert "KernelProcessDied" in exits and "KernelProcessHung" in hangs, (exits, hangs)
        assert fine == NOT_ON_A_GPU and pre.session.processes == 1
    finally:
        pre.close()


def _processes_with(token: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError, ValueError):
            if token in cmdline.read_bytes().decode(errors="replace").split("\x00"):
                pids.append(int(cmdline.parent.name))
    return pids


def test_what_a_kernel_starts_does_not_outlive_its_job(tmp_path, confined) -> None:
    """Whether the runner is still there, died, or its child left its own child behind (a double fork)."""
    token = f"600.{random.randrange(10**6):06d}"  # a long sleep of the test's own, found by its command line
    start = f"import os, subprocess\nsubprocess.Popen(['sleep', '{token}'], start_new_session=True)\n"
    double = (f"import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              f"        os.execvp('sleep', ['sleep', '{token}'])\n    os._exit(0)\n")  # fmt: skip
    pre = Precompiler("cpu")
    try:
        stopped = _stopped(_run(pre, tmp_path, [("returns", start + LAUNCHES_NOTHING), ("exits", start + "os._exit(3)\n"),
                                                ("double", double + LAUNCHES_NOTHING)]))  # fmt: skip
        assert stopped[0] == NOT_ON_A_GPU == stopped[2] and "KernelProcessDied" in stopped[1], stopped
        deadline = time.monotonic() + 5
        while _processes_with(token) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_with(token) == []
    finally:
        pre.close()
        for pid in _processes_with(token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def test_a_job_still_waiting_when_the_next_comes_is_dropped(tmp_path, confined) -> None:
    pre = Precompiler("cpu")
    try:
        slow = "import time\ntime.sleep(3)\n" + LAUNCHES_NOTHING
        pre.submit(_spec(), _kernel(tmp_path, "slow", slow), seed=3, compile_limit_s=15)
        deadline = time.monotonic() + 60
        while pre.session.jobs == 0 and time.monotonic() < deadline:  # until the thread has handed it over
            time.sleep(0.01)
        for name in ("dropped", "last"):  # both come while the first runs
            pre.submit(_spec(), _kernel(tmp_path, name, LAUNCHES_NOTHING), seed=3, compile_limit_s=15)
        assert pre.wait_idle(180)
        assert [Path(request.kernel_path).parent.name for request, _ in pre.results] == ["slow", "last"]
    finally:
        pre.close()


def test_the_kernel_writes_only_its_runners_own_folder(tmp_path, confined) -> None:
    """Not outside, not the folder its process and the next jobs' share, not the job folder where the worker
    writes requests; and what it writes in its own folder is gone before the next job (a module planted
    there is not found)."""
    outside = tmp_path / "planted.txt"
    plants = "open('helper_planted.py', 'w').write('X = 1')\n" + LAUNCHES_NOTHING
    pre = Precompiler("cpu")
    try:
        stopped = _stopped(_run(pre, tmp_path, [(name, f"open({target!r}, 'w').write('x')\n") for name, target in
                                                [("outside", str(outside)), ("shared", "../planted.txt"),
                                                 ("job_folder", "../../planted.txt")]]))  # fmt: skip
        assert all("PermissionError" in s for s in stopped), stopped
        assert not outside.exists()
        stopped = _stopped(_run(pre, tmp_path, [("plants", plants), ("imports", "import helper_planted\n")]))
        assert stopped[0] == NOT_ON_A_GPU and "ModuleNotFoundError" in stopped[1], stopped
    finally:
        pre.close()


def test_no_compile_ahead_without_a_sandbox(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BEAMSEARCH_SANDBOX", "0")  # the child's environment, and so its own spare
    pre = Precompiler("cpu")
    try:
        (stopped,) = _stopped(_run(pre, tmp_path, [("k", "raise SystemExit('imported')\n")]))
        assert stopped.startswith("not compiled ahead where its runner cannot be confined"), stopped
    finally:
        pre.close()


def _task(id_: str, kernel: Kernel | None, device: str = "cpu") -> Task:
    entry = BeamEntry(id="input", kernel=Kernel(source="x = 1", origin="input"), ranked_ms=1.0, round=0)
    return Task(id=id_, round=1, direction=0, parent=entry, spec=_spec(device), config=SearchConfig(problem="p"),
                kernel=kernel)  # fmt: skip


def test_only_a_knob_variant_on_a_gpu_is_compiled_ahead() -> None:
    variant = Kernel(source=LAUNCHES_NOTHING, origin="tuner")
    assert next_variant(_task("r1-t4", variant, "cuda"), _spec("cuda")) == NextVariant(task_id="r1-t4", kernel=variant)
    assert next_variant(_task("r1-t4", variant), _spec("cpu")) is None, "the interpreter compiles nothing"
    assert next_variant(None, _spec("cuda")) is None
    assert next_variant(_task("r1-t4", None, "cuda"), _spec("cuda")) is None, "a model's kernel: not made yet"
    model = Kernel(source=LAUNCHES_NOTHING, origin="llm")
    assert next_variant(_task("r1-t4", model, "cuda"), _spec("cuda")) is None, "arbitrary code: its own processes"


def test_a_worker_compiles_the_variant_behind_its_task_and_ends_that_with_itself(monkeypatch, confined) -> None:
    from workers.actor.task import TUNER_INTERPRETED_LIMIT_S, WorkerContext, task_seeds

    ctx = WorkerContext("w9")
    task = _task("r1-t0", None).model_copy(
        update={"compile_next": NextVariant(task_id="r1-t4", kernel=Kernel(source=LAUNCHES_NOTHING, origin="tuner"))})
    try:
        ctx.precompile_next(task)
        pre = ctx._precompiler
        assert pre is not None and pre.wait_idle(120)
        ((request, result),) = pre.results
        assert Path(request.kernel_path).read_text() == LAUNCHES_NOTHING
        assert Path(request.kernel_path).parent.name == "r1-t4-ahead"
        assert request.seed == task_seeds("r1-t4", 0)[0], "the variant's own first seed, as its verification has"
        assert isinstance(result, PrecompileResult) and result.stopped == NOT_ON_A_GPU
        assert request.compile_limit_s == TUNER_INTERPRETED_LIMIT_S, "the variant's own limit"
        ctx.precompile_next(_task("r1-t1", None))  # nothing behind it: nothing new
        assert pre.wait_idle(10) and len(pre.results) == 1
        monkeypatch.setattr(ctx, "kernel_file", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
        ctx.precompile_next(task)  # only logged: the task goes on
        assert pre.wait_idle(10) and len(pre.results) == 1
    finally:
        ctx.close()
    assert pre.session.child is None and ctx._precompiler is None


@pytest.mark.gpu
def test_a_variant_compiled_ahead_is_loaded_not_compiled_by_its_own_pass(tmp_path, monkeypatch, confined) -> None:
    """The compile lands in Triton's cache, where the variant's verification finds it, though from another
    file of the same source (a task's ``<id>-ahead`` and its own): its runner compiles nothing again."""
    from workers.harness.verify import VerifySession, verify_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # the children's, started after this
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda", dtype="bf16")
    ahead, own = tmp_path / "r1-t4-ahead", tmp_path / "r1-t4-v0"
    for folder in (ahead, own):
        folder.mkdir()
        for name in ("good.py", "_scale.py"):
            (folder / name).write_text((KERNELS / name).read_text())
    pre, session = Precompiler("cuda"), VerifySession("cuda")
    try:
        pre.submit(spec, ahead / "good.py", seed=11, compile_limit_s=8)
        assert pre.wait_idle(300)
        ((_, result),) = pre.results
        assert isinstance(result, PrecompileResult) and result.compiled and not result.stopped, result
        assert result.sandbox.startswith("landlock"), result.sandbox
        cubins = sorted((tmp_path / "cache").rglob("scale_kernel.cubin"))
        assert len(cubins) == 1
        verdict = verify_kernel(spec, str(own / "good.py"), seeds=[11, 12, 13], session=session)
        assert verdict.passed, verdict.reason
        assert verdict.compiled_ahead == result.compiled == ["scale_kernel"]
        # the judge's own comparison kernel is compiled into the same cache: only the kernel's code is counted
        assert sorted((tmp_path / "cache").rglob("scale_kernel.cubin")) == cubins, "the kernel was not compiled again"
    finally:
        pre.close()
        session.close()
