"""A worker's knob variants verified in one session (CPU, Triton interpreter): the judge and runner serve
kernel after kernel while each passes everything, and any other verdict ends them."""

from __future__ import annotations

import shutil

import pytest

from beamsearch.records.schema import RunSpec, TimingKnobs
from tests.conftest import KERNELS
from workers.harness.verify import VerifySession, runner_reusable, verify_kernel

BUDGET = dict(warmup_ms=5.0, rep_ms=20.0, min_reps=3, max_reps=10)


@pytest.fixture
def session():
    s = VerifySession("cpu")
    yield s
    s.close()


def _copy(tmp_path, name: str, as_name: str):
    """A kernel file of its own, as each variant of the optimiser is; the helper module beside it."""
    shutil.copy(KERNELS / "_scale.py", tmp_path / "_scale.py")
    return str(shutil.copy(KERNELS / name, tmp_path / as_name))


def _verify(spec: RunSpec, path: str, seed: int, session: VerifySession | None, tmp_path):
    knobs = TimingKnobs(seed=seed, lock_dir=str(tmp_path / "locks"), **BUDGET)
    return verify_kernel(spec, path, seeds=[seed, seed + 1, seed + 2], timing=knobs, session=session)


def test_passing_kernels_share_the_processes_and_a_failure_ends_them(scale_spec, session, tmp_path) -> None:
    first = _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    assert first.passed and runner_reusable(first) and "runner_kept" in first.steps_s, first.reason
    judge = session.child.child.proc.pid
    second = _verify(scale_spec, _copy(tmp_path, "good.py", "v2.py"), 20, session, tmp_path)
    assert second.passed and second.timing.status == "ok", second.reason
    assert session.processes == 1 and session.child.child.proc.pid == judge  # no process started for it

    wrong = _verify(scale_spec, _copy(tmp_path, "wrong_values.py", "v3.py"), 30, session, tmp_path)
    assert wrong.status == "incorrect" and "runner_stopped" in wrong.steps_s
    assert session.child.child is None  # the failure ended the judge and its runner

    again = _verify(scale_spec, _copy(tmp_path, "good.py", "v4.py"), 40, session, tmp_path)
    assert again.passed and session.processes == 2, again.reason


def test_a_kernel_in_a_session_gets_the_checks_a_fresh_process_gives(scale_spec, session, tmp_path) -> None:
    """The second kernel of a session is checked exactly as one verified alone."""
    _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    path = _copy(tmp_path, "good.py", "v2.py")
    in_session = _verify(scale_spec, path, 50, session, tmp_path)
    alone = _verify(scale_spec, path, 50, None, tmp_path)
    assert session.processes == 1
    assert [c.model_dump() for c in in_session.checks] == [c.model_dump() for c in alone.checks]
    assert [c.model_dump() for c in in_session.timing.checks] == [c.model_dump() for c in alone.timing.checks]


def test_harness_changes_of_a_later_kernel_are_caught_and_end_the_session(scale_spec, session, tmp_path) -> None:
    """A later kernel of a session that replaces a name of the harness is caught as in a fresh process."""
    _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    patcher = tmp_path / "v2.py"
    patcher.write_text((KERNELS / "good.py").read_text().replace(
        "def kernel_function", "torch.allclose = lambda *a, **k: True\n\n\ndef kernel_function"))  # fmt: skip
    verdict = _verify(scale_spec, str(patcher), 20, session, tmp_path)
    assert verdict.status == "incorrect" and "harness_intact" in verdict.reason, verdict.reason
    assert "torch.allclose was replaced" in verdict.reason and session.child.child is None


def test_a_thread_a_later_kernel_leaves_running_ends_the_session(scale_spec, session, tmp_path) -> None:
    _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    threads = tmp_path / "v2.py"
    threads.write_text((KERNELS / "good.py").read_text().replace(
        "def kernel_function",
        "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n\n\n"
        "def kernel_function"))  # fmt: skip
    verdict = _verify(scale_spec, str(threads), 20, session, tmp_path)
    assert verdict.status == "incorrect" and "background_work" in verdict.reason, verdict.reason
    assert session.child.child is None


def test_a_seed_seen_before_in_the_processes_starts_fresh_ones(scale_spec, session, tmp_path) -> None:
    """No kernel of a session is shown inputs an earlier kernel of the same processes saw: one that kept
    the earlier answers would pass without computing."""
    _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    _verify(scale_spec, _copy(tmp_path, "good.py", "v2.py"), 12, session, tmp_path)  # 12 was v1's third seed
    assert session.processes == 2


@pytest.mark.slow
def test_a_hang_in_a_session_is_killed_and_the_next_kernel_gets_fresh_processes(scale_spec, session, tmp_path) -> None:
    _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    knobs = TimingKnobs(seed=20, lock_dir=str(tmp_path / "locks"), **BUDGET)
    hung = verify_kernel(scale_spec, str(KERNELS / "hangs.py"), seeds=[20, 21, 22], timing=knobs, timeout_s=15,
                         session=session)  # fmt: skip
    assert hung.status == "timeout" and session.child.child is None
    after = _verify(scale_spec, _copy(tmp_path, "good.py", "v3.py"), 30, session, tmp_path)
    assert after.passed and session.processes == 2, after.reason


def test_a_passing_kernel_hands_its_memory_back_before_the_next(scale_spec, session, tmp_path) -> None:
    """Once its verdict is made, a session's kernel is released: the runner drops its tensors while it waits
    (on a GPU, memory the next verification's place is budgeted without), and what it left changed then
    is a failure like any other."""
    verdict = _verify(scale_spec, _copy(tmp_path, "good.py", "v1.py"), 10, session, tmp_path)
    assert "released" in verdict.steps_s and verdict.steps_s["released"] <= verdict.steps_s["runner_kept"]
    late = tmp_path / "v2.py"  # replaces a name of the harness when the runner drops its inputs at the release
    late.write_text((KERNELS / "good.py").read_text().replace("return launch(", "return _late(") + """

import inspect
import weakref



def _tamper_if_released():
    if any(frame.function == "release" for frame in inspect.stack()):
        torch.allclose = lambda *a, **k: True


def _late(x, *args):
    weakref.finalize(x, _tamper_if_released)  # each call's input; only the last is dropped at the release
    return launch(x, *args)
""")
    verdict = _verify(scale_spec, str(late), 20, session, tmp_path)
    assert not verdict.passed and "after its last call" in verdict.reason, verdict.reason
    assert "torch.allclose was replaced" in verdict.reason and session.child.child is None


def test_each_gpu_step_of_the_checks_holds_the_use_lock_and_lets_go_between(monkeypatch, scale_spec, tmp_path) -> None:
    """The judge holds the GPU's use lock around each step of its checks that runs the kernel (its import,
    each seed, each cache check), letting go between them, so a timing of another job waits for one step
    rather than for all the checks (docs/gpu-sharing.md). The lock itself is a no-op on the CPU: here it
    is replaced by one that counts."""
    import contextlib

    from beamsearch.records.schema import DEFAULT_TOLERANCES, VerifyRequest
    from workers.harness import verify_child
    from workers.harness.kernel_runner import KernelProcess

    holds, depth, requests = [], [0], []

    @contextlib.contextmanager
    def counting_use(device: str, lock_dir: str = ""):
        depth[0] += 1
        holds.append(device)
        try:
            yield 0.0
        finally:
            depth[0] -= 1

    original = verify_child._Kernel.request

    def request(self, body, *args, **kwargs):
        requests.append((body.op, depth[0]))
        return original(self, body, *args, **kwargs)

    monkeypatch.setattr(verify_child, "gpu_in_use", counting_use)
    monkeypatch.setattr(verify_child._Kernel, "request", request)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as child_process sets it for a CPU child
    monkeypatch.chdir(tmp_path)  # the runner's working folder: its writes and temporary files go there
    runner = KernelProcess.fork()
    req = VerifyRequest(spec=scale_spec, kernel_path=str(KERNELS / "good.py"), seeds=[0, 1, 2],
                        tolerance=DEFAULT_TOLERANCES[scale_spec.dtype])  # fmt: skip
    verdict = verify_child.verify(req, runner)
    assert verdict.passed, verdict.reason
    assert [op for op, _ in requests] == ["load"] + ["call"] * 6
    assert all(d == 1 for _, d in requests)  # every request to the kernel inside one hold, none nested
    assert len(holds) == 8 and depth[0] == 0  # the problem, the import, three seeds, three cache checks


@pytest.mark.slow
def test_every_bad_kernel_gets_its_one_shot_verdict_in_a_session_and_ends_it(scale_spec, session, tmp_path) -> None:
    """Each bad kernel of tests/test_verify.py, met in a session after a kernel that passed: the same
    status, check and reason as verified alone; the session's processes end; the next kernel passes in
    fresh ones."""
    from tests.test_verify import BAD_KERNELS

    seed = 100
    for name, (status, check, words) in sorted(BAD_KERNELS.items()):
        assert _verify(scale_spec, _copy(tmp_path, "good.py", f"good_{seed}.py"), seed, session, tmp_path).passed
        started = session.processes
        bad = _verify(scale_spec, _copy(tmp_path, name, f"{seed}_{name}"), seed + 10, session, tmp_path)
        assert bad.status == status and words in bad.reason, (name, bad.reason)
        if check is not None:
            assert [c.name for c in bad.checks if not c.passed] == [check], name
        assert session.child.child is None, name
        after = _verify(scale_spec, _copy(tmp_path, "good.py", f"after_{seed}.py"), seed + 20, session, tmp_path)
        assert after.passed and session.processes == started + 1, (name, after.reason)
        seed += 100
