"""A worker's background compile of the variant it will probably run next (``workers.actor.precompiler``,
``workers.harness.precompile_child``): the jobs, their process, what a bad kernel costs, and on a GPU that
the variant's own compile pass then finds its code in Triton's cache."""

from __future__ import annotations

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


def _spec(device: str = "cpu") -> RunSpec:
    return RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="small", device=device)


def _kernel(folder: Path, name: str, source: str) -> Path:
    path = folder / name / "kernel.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    return path


def _outcomes(pre: Precompiler) -> list[tuple[str, PrecompileResult | str]]:
    return [(Path(request.kernel_path).parent.name, r) for request, r in pre.results]


def test_one_process_serves_job_after_job_each_in_a_fresh_runner(tmp_path) -> None:
    pre = Precompiler("cpu")
    try:
        for name, source in [("a", LAUNCHES_NOTHING), ("stops", "raise ValueError('no')\n"), ("b", LAUNCHES_NOTHING)]:
            pre.submit(_spec(), _kernel(tmp_path, name, source), seed=3)
            assert pre.wait_idle(120)
        (_, a), (_, stops), (_, b) = _outcomes(pre)
        assert isinstance(a, PrecompileResult) and a.stopped == "not on a GPU" == b.stopped, "the runner's CPU answer"
        assert isinstance(stops, PrecompileResult) and "ValueError: no" in stops.stopped
        assert pre.session.processes == 1
    finally:
        pre.close()
    assert pre.session.child is None


def test_a_kernel_that_ends_or_hangs_its_process_costs_only_its_own_job(tmp_path) -> None:
    pre = Precompiler("cpu", timeout_s=20)
    try:
        for name, source in [("first", LAUNCHES_NOTHING), ("exits", "import os\nos._exit(3)\n"),
                             ("hangs", "import time\ntime.sleep(600)\n"), ("fine", LAUNCHES_NOTHING)]:  # fmt: skip
            pre.submit(_spec(), _kernel(tmp_path, name, source), seed=3)
            assert pre.wait_idle(120)
        _, (_, exits), (_, hangs), (_, fine) = _outcomes(pre)
        assert isinstance(exits, PrecompileResult) and "KernelProcessDied" in exits.stopped, exits
        assert hangs == "killed after the time limit"
        assert isinstance(fine, PrecompileResult) and fine.stopped == "not on a GPU"
        assert pre.session.processes == 2, "a runner that exits costs no process; the job that hung costs its own"
    finally:
        pre.close()


def _running(token: str) -> bool:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if token in cmdline.read_bytes().decode(errors="replace"):
                return True
        except OSError:
            continue
    return False


def test_what_a_kernel_starts_does_not_outlive_its_job(tmp_path) -> None:
    token = f"{time.time_ns() % 10**6}.123"  # a sleep of its own, found by its command line
    starts = f"import subprocess\nsubprocess.Popen(['sleep', '{token}'], start_new_session=True)\n" + LAUNCHES_NOTHING
    pre = Precompiler("cpu")
    try:
        pre.submit(_spec(), _kernel(tmp_path, "starts", starts), seed=3)
        assert pre.wait_idle(120)
        assert [r.stopped for _, r in _outcomes(pre)] == ["not on a GPU"]
        deadline = time.monotonic() + 5
        while _running(f"sleep\x00{token}") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(f"sleep\x00{token}")
    finally:
        pre.close()


def test_a_job_still_waiting_when_the_next_comes_is_dropped(tmp_path) -> None:
    pre = Precompiler("cpu")
    try:
        slow = "import time\ntime.sleep(3)\n" + LAUNCHES_NOTHING
        pre.submit(_spec(), _kernel(tmp_path, "slow", slow), seed=3)
        deadline = time.monotonic() + 60
        while pre.session.jobs == 0 and time.monotonic() < deadline:  # until the thread has handed it over
            time.sleep(0.01)
        for name in ("dropped", "last"):  # both come while the first runs
            pre.submit(_spec(), _kernel(tmp_path, name, LAUNCHES_NOTHING), seed=3)
        assert pre.wait_idle(120)
        assert [n for n, _ in _outcomes(pre)] == ["slow", "last"]
    finally:
        pre.close()


def test_the_kernel_writes_only_its_runners_work_folder(tmp_path) -> None:
    from workers.harness.sandbox import landlock_abi

    if landlock_abi() < 1:
        pytest.skip("Landlock is not available on this kernel")
    outside = tmp_path / "planted.txt"
    pre = Precompiler("cpu")
    try:
        for name, target in [("outside", repr(str(outside))), ("job_folder", "'../planted.txt'")]:
            pre.submit(_spec(), _kernel(tmp_path, name, f"open({target}, 'w').write('x')\n"), seed=3)
            assert pre.wait_idle(120)
        for _, result in _outcomes(pre):
            assert isinstance(result, PrecompileResult) and "PermissionError" in result.stopped, result
        assert not outside.exists()
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


def test_a_worker_compiles_the_variant_behind_its_task_and_ends_that_with_itself(monkeypatch) -> None:
    from workers.actor.task import WorkerContext, task_seeds

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
        assert isinstance(result, PrecompileResult) and result.stopped == "not on a GPU"
        ctx.precompile_next(_task("r1-t1", None))  # nothing behind it: nothing new
        assert pre.wait_idle(10) and len(pre.results) == 1
        monkeypatch.setattr(ctx, "kernel_file", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
        ctx.precompile_next(task)  # only logged: the task goes on
        assert pre.wait_idle(10) and len(pre.results) == 1
    finally:
        ctx.close()
    assert pre.session.child is None and ctx._precompiler is None


@pytest.mark.gpu
def test_a_variant_compiled_ahead_is_loaded_not_compiled_by_its_own_pass(tmp_path, monkeypatch) -> None:
    """The compile lands in Triton's cache, where the variant's verification finds it: its runner's pass
    and first call add nothing to the cache."""
    from workers.harness.verify import VerifySession, verify_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # the children's, started after this
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device="cuda", dtype="bf16")
    path = KERNELS / "good.py"
    pre, session = Precompiler("cuda"), VerifySession("cuda")
    try:
        pre.submit(spec, path, seed=11)
        assert pre.wait_idle(300)
        ((_, result),) = pre.results
        assert isinstance(result, PrecompileResult) and result.compiled and not result.stopped, result
        assert result.sandbox.startswith("landlock"), result.sandbox
        cubins = sorted((tmp_path / "cache").rglob("scale_kernel.cubin"))
        assert len(cubins) == 1
        verdict = verify_kernel(spec, str(path), seeds=[11, 12, 13], session=session)
        assert verdict.passed, verdict.reason
        assert verdict.compiled_ahead == result.compiled == ["scale_kernel"]
        # the judge's own comparison kernel is compiled into the same cache: only the kernel's code is counted
        assert sorted((tmp_path / "cache").rglob("scale_kernel.cubin")) == cubins, "the kernel was not compiled again"
    finally:
        pre.close()
        session.close()
