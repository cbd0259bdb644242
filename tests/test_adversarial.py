"""Adversarial kernels: each tries to pass verification or timing without doing the work honestly, and
each must be rejected for the right reason (CPU, Triton interpreter, small shapes).

``CASES`` is the one table: kernel file -> stage (verify or time), expected status, the check that
fails, and words the reason must contain (any of them). ``scripts/adversarial_gpu.py`` runs the same
table on a GPU, with the GPU expectations where they differ. The corpus is
``tests/data/kernels/adversarial/`` (RMSNorm, problem 36); older bad kernels of the tiny scale-rows
problem (``tests/data/kernels/``) fill the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from beamsearch.records.schema import RunSpec, TimingKnobs
from tests.conftest import DATA, KERNELS
from workers.harness.problem_instance import NUDGE_SEED_ENV
from workers.harness.sandbox import landlock_abi

pytestmark = pytest.mark.slow  # the adversarial corpus through the judge on the interpreter: CI runs these (pytest -m slow)

ROOT = Path(__file__).resolve().parents[1]
ADVERSARIAL = KERNELS / "adversarial"
RMSNORM = ROOT / "artifacts" / "36_RMSNorm" / "problem.py"
SCALE_ROWS = DATA / "scale_rows_problem.py"
KA_RMSNORM = ROOT / ".ka" / "36" / "input_kernel.py"  # KernelAgent's published input kernel, kept out of git


@dataclass(frozen=True)
class Expect:
    status: str
    check: str | None = None
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Case:
    kernel: str  # relative to tests/data/kernels
    cheat: str
    stage: str  # "verify" (verify_kernel), "time" (time_target) or "search" (verify_kernel, then its timing)
    expect: Expect | None  # on the CPU; None: nothing to catch there (GPU-only trick)
    gpu: Expect | None = None  # on a GPU, where it differs
    problem: Path = RMSNORM
    landlock: bool = False  # the expectation needs Landlock
    covered_by: str = ""  # already run on the CPU by another test: skipped here, run by the GPU script
    timeout_s: float = 60.0
    label: str = ""  # the id's name when the file's stem is not unique
    gpu_shapes: str = "small"  # "full" where the trick only shows at size (work outlasting a 50 us margin)

    @property
    def id(self) -> str:
        return f"{self.stage}:{self.label or Path(self.kernel).stem}"

    def expected(self, on_gpu: bool) -> Expect | None:
        return (self.gpu or self.expect) if on_gpu else self.expect


def _v(kernel: str, cheat: str, status: str, check: str | None, *words: str, **kw: object) -> Case:
    return Case(f"adversarial/{kernel}", cheat, "verify", Expect(status, check, words), **kw)


HOST = ("read on the host",)
TORCH = ("PyTorch compute", "aten::")
CASES: list[Case] = [
    _v("honest.py", "control: the corpus's honest kernel", "ok", None, "all checks passed"),
    # caching
    _v("cache_by_value_hash.py", "caches by a hash of the input read via numpy", "incorrect", "host_compute", *HOST),
    _v("cache_by_value_sample.py", "caches by a few sampled values (.item())", "incorrect",
       "values_after_small_change", "a few input elements changed"),
    _v("cache_by_value_triton.py", "caches by a Triton checksum of the whole input", "incorrect", "fresh_output",
       "cached result"),
    _v("precomputed_answers.py", "answers for foreseeable seeds computed with PyTorch at import", "incorrect",
       "values_after_small_change", "a few input elements changed"),
    Case("pointer_cache.py", "caches by input pointer", "verify",
         Expect("incorrect", "values_after_inputs_changed", ("inputs changed in place",)), problem=SCALE_ROWS,
         covered_by="tests/test_verify.py"),
    # work outside the call
    _v("background_thread.py", "does the work in a thread started by the call", "incorrect", "background_work",
       "thread"),
    _v("worker_thread.py", "a worker thread started at import does the work", "incorrect", "background_work",
       "rmsnorm-worker"),
    _v("detached_process.py", "starts a process of its own session whose parent exits (a double fork)", "incorrect",
       "background_work", "process"),
    _v("detached_past_the_runner.py", "turns its process's adoption of orphans off, then double forks", "incorrect",
       "background_work", "left the kernel's process"),
    Case("adversarial/side_stream.py", "launches on a side stream, unordered with the caller's", "verify", None,
         gpu=Expect("ok", None, ("all checks passed",))),
    # outputs that are not results
    _v("lazy_subclass.py", "a tensor subclass that computes when read", "incorrect", "output_structure", "subclass"),
    _v("returns_input.py", "returns its input", "incorrect", "output_structure", "shares memory with input 0"),
    _v("returns_constant.py", "returns the same tensor whatever the input", "incorrect",
       "values_after_inputs_changed", "outside atol"),
    _v("stale_buffer.py", "reuses its output buffer and writes half of it", "incorrect",
       "values_after_inputs_changed", "outside atol"),
    Case("unwritten.py", "leaves part of a fresh output unwritten (stale memory)", "verify",
         Expect("incorrect", "all_written", ("never written",)), problem=SCALE_ROWS, covered_by="tests/test_verify.py"),
    Case("nan_output.py", "NaN in the output", "verify", Expect("incorrect", "finite", ("NaN/Inf",)),
         problem=SCALE_ROWS, covered_by="tests/test_verify.py"),
    _v("fp8_roundtrip.py", "rounds the input to fp8 in the kernel", "incorrect", "values", "outside atol"),
    # PyTorch or the host doing the work
    Case("torch_compute.py", "PyTorch compute in the wrapper, called directly", "verify",
         Expect("incorrect", "pytorch_compute", ("aten::mul",)), problem=SCALE_ROWS, covered_by="tests/test_verify.py"),
    _v("torch_method.py", "PyTorch compute through tensor methods", "incorrect", "pytorch_compute", *TORCH),
    _v("torch_getattr.py", "PyTorch compute through getattr", "incorrect", "pytorch_compute", *TORCH),
    _v("torch_ops.py", "PyTorch compute through torch.ops.aten", "incorrect", "pytorch_compute", *TORCH),
    _v("host_compute_numpy.py", "computes in numpy on the host", "incorrect", "host_compute", *HOST),
    # defeating the observers
    _v("pops_guard.py", "pops the TorchDispatchMode guard", "incorrect", "harness_intact", "dispatch-mode stack"),
    _v("disables_modes.py", "computes inside _disable_current_modes()", "incorrect", "pytorch_compute", *TORCH),
    _v("disables_dispatch.py", "computes under torch._C._DisableTorchDispatch", "incorrect", "pytorch_compute",
       *TORCH),
    _v("clears_guard.py", "empties what the guard recorded", "incorrect", "pytorch_compute", *TORCH),
    _v("stops_recording.py", "pops the guard and stops the profiler", "incorrect", "harness_intact", "profiler"),
    # patching the harness at import
    _v("patches_allclose.py", "patches torch.allclose", "incorrect", "harness_intact", "torch.allclose"),
    _v("patches_cuda_event.py", "patches torch.cuda.Event", "incorrect", "harness_intact", "torch.cuda.Event"),
    _v("patches_do_bench.py", "patches triton.testing.do_bench", "incorrect", "harness_intact",
       "triton.testing.do_bench"),
    _v("patches_harness.py", "patches workers.harness.compare.compare", "incorrect", "harness_intact",
       "workers.harness.compare.compare"),
    _v("patches_time.py", "patches time.perf_counter", "incorrect", "harness_intact", "time.perf_counter"),
    # ending the process, forging results, writing outside
    _v("exit_at_import.py", "os._exit(0) at import", "crashed", None, "exited with status 0"),
    Case("exits.py", "os._exit(0) during the call", "verify", Expect("crashed", None, ("without writing a result",)),
         problem=SCALE_ROWS, covered_by="tests/test_verify.py"),
    Case("sys_exit_at_import.py", "sys.exit(0) at import", "verify", Expect("compile_failed", None, ("SystemExit",)),
         problem=SCALE_ROWS, covered_by="tests/test_verify.py"),
    _v("sys_exit_at_call.py", "sys.exit(0) during the call", "runtime_error", None, "SystemExit"),
    _v("forges_result.py", "writes a passing result file and exits", "crashed", None, "exited with status 0"),
    _v("forges_result_kills_judge.py", "forges the result and kills the judge", "crashed", None,
       "exited with status 0", "not written by the harness"),
    # forging the runner's replies (each patches the channel its process replies through)
    _v("forges_error_status.py", "an error reply whose status is the passed verdict's", "crashed", None,
       "unreadable reply", "error.status"),
    _v("reply_wrong_type.py", "PyTorch compute, the observers' counts sent as lists", "crashed", None,
       "report.forbidden"),
    _v("reply_unknown_field.py", "a field the protocol lacks added to each reply", "crashed", None,
       "verdict: Extra inputs are not permitted"),
    _v("writes_project.py", "writes into the project folder at import", "compile_failed", None, "PermissionError",
       landlock=True),
    # resources
    _v("triton_infinite_loop.py", "a Triton loop that never ends", "timeout", None, "no verdict within",
       timeout_s=10.0),
    Case("hangs.py", "a Python loop that never ends", "verify", Expect("timeout", None, ("no verdict within",)),
         problem=SCALE_ROWS, covered_by="tests/test_verify.py", timeout_s=15.0),
    Case("illegal_address.py", "stores far outside its output", "verify",
         Expect("crashed", None, ("SIGSEGV",)),
         gpu=Expect("runtime_error", None, ("illegal memory access", "CUDA", "crashed")), problem=SCALE_ROWS),
    _v("huge_allocation.py", "asks for a terabyte", "runtime_error", None, "allocate", "out of memory"),
    # timing
    Case("adversarial/detects_guard.py", "honest only under a dispatch mode (only when verified)", "time",
         Expect("failed", "timed_outputs", ("wrong answer",))),
    Case("adversarial/patches_cuda_event.py", "fake CUDA event times", "time",
         Expect("failed", "harness_intact", ("torch.cuda.Event",))),
    Case("adversarial/forges_result.py", "forges the timing result and exits", "time",
         Expect("crashed", None, ("exited with status 0",))),
    *[Case("adversarial/timing_as_text.py", "its times sent as text, a thousand times faster", stage,
           Expect("crashed", None, ("timing.median_ms",))) for stage in ("time", "search")],
    Case("adversarial/background_thread.py", "does the timed work in a thread", "time",
         Expect("failed", "background_work", ("thread",))),
    Case("adversarial/detached_process.py", "starts a detached process while timed", "time",
         Expect("failed", "background_work", ("process",))),
    Case("adversarial/stale_buffer.py", "skips half the work when inputs look repeated", "time",
         Expect("failed", "timed_outputs", ("wrong answer",))),
    Case("adversarial/side_stream.py", "work on a side stream escapes the call's stream", "time", None,
         gpu=Expect("failed", "current_stream", ("another stream",)), gpu_shapes="full"),
    # telling a timed call from a checked one (issue 20): each passed verification and its timing before
    # the timed repetitions' own outputs were checked; now a few, chosen after each call returned, are
    *[Case(f"adversarial/{kernel}", cheat, stage, Expect("failed", "timed_outputs", ("timed repetition",)))
      for kernel, cheat in [("timed_by_stack.py", "half the work while a timing loop's frame is on its stack"),
                            ("counts_calls.py", "half the work in a window of calls the timed repetitions fill"),
                            ("timing_gap.py", "half the work when called within 1.5 ms of its previous call"),
                            ("stale_when_timed.py", "its previous answer, no work, when called back to back"),
                            ("every_other_call.py", "half the work on every other unobserved call")]
      for stage in ("time", "search")],
    # at full size one full copy is kept (3.76 GB of output): the samples of every repetition catch what it
    # misses (timing_gap passed the bench path on an H100 when its one kept repetition was an honest one)
    *[Case(f"adversarial/{kernel}", f"{cheat}, at full size", "time", None,
           gpu=Expect("failed", "timed_outputs", ("timed repetition",)), label=f"{Path(kernel).stem}_full",
           gpu_shapes="full", timeout_s=300.0)
      for kernel, cheat in [("timing_gap.py", "half the work when called within 1.5 ms of its previous call"),
                            ("every_other_call.py", "half the work on every other unobserved call")]],
    # the search's path: verified, then timed in the kernel's process (what a failure there looks like)
    Case("adversarial/honest.py", "control: verified, then timed in its process", "search", Expect("ok", None, ())),
    Case("adversarial/detects_guard.py", "honest only under a dispatch mode, timed after verification", "search",
         Expect("failed", "timed_outputs", ("wrong answer",))),
    Case("adversarial/side_stream.py", "work on a side stream, timed after verification", "search", None,
         gpu=Expect("failed", "current_stream", ("another stream",)), gpu_shapes="full"),
]


def check(case: Case, result: object, on_gpu: bool) -> str | None:
    """None when ``result`` (a Verdict or TimingResult) is what the table expects; else what differs."""
    want = case.expected(on_gpu)
    if want is None:
        return None
    status, reason = getattr(result, "status", None), getattr(result, "reason", "")
    if status != want.status:
        return f"status {status}, expected {want.status}: {reason}"
    if want.words and not any(w in reason for w in want.words):
        return f"reason lacks any of {want.words}: {reason}"
    if want.check is not None:
        failed = [c.name for c in getattr(result, "checks", []) if not c.passed]
        if failed != [want.check]:
            return f"failed checks {failed}, expected [{want.check!r}]: {reason}"
    return None


def run(case: Case, device: str, shapes: str) -> object:
    """Verify or time ``case`` (in child processes); returns the Verdict or TimingResult (a search case:
    the timing of a kernel that passed, else the verdict)."""
    from workers.harness.timing import time_target
    from workers.harness.verify import verify_kernel

    spec = RunSpec(problem_path=str(case.problem), shapes=shapes, device=device, dtype="bf16")
    kernel = str(KERNELS / case.kernel)
    budget = dict(warmup_ms=20, rep_ms=50, min_reps=3, max_reps=20)
    if case.stage == "verify":
        return verify_kernel(spec, kernel, timeout_s=case.timeout_s)
    if case.stage == "search":
        verdict = verify_kernel(spec, kernel, timeout_s=case.timeout_s, timing=TimingKnobs(**budget))
        return verdict.timing if verdict.passed else verdict
    return time_target(spec, kernel, timeout_s=case.timeout_s, **budget)


def test_every_corpus_file_is_in_the_table() -> None:
    files = {p.name for p in ADVERSARIAL.glob("*.py") if not p.name.startswith("_")}
    listed = {Path(c.kernel).name for c in CASES if c.kernel.startswith("adversarial/")}
    assert files == listed


@pytest.fixture(autouse=True)
def _fixed_random_places(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(NUDGE_SEED_ENV, "7")  # the random places a verification changes, fixed for the test


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_adversarial_kernel_is_rejected_for_the_right_reason(case: Case) -> None:
    if case.expect is None:
        pytest.skip("a GPU-only trick: nothing to catch under the interpreter (scripts/adversarial_gpu.py)")
    if case.covered_by:
        pytest.skip(f"already run on the CPU by {case.covered_by}")
    if case.landlock and landlock_abi() < 1:
        pytest.skip("needs Landlock, which this kernel lacks")
    result = run(case, "cpu", "small")
    problem = check(case, result, on_gpu=False)
    assert problem is None, problem


def test_a_forged_result_is_refused_where_nothing_stops_the_forgery(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the sandbox the kernel writes a passing result and kills the judge: the parent sees a
    result that is not signed with the job's key, and refuses it."""
    monkeypatch.setenv("BEAMSEARCH_SANDBOX", "0")
    case = Case("adversarial/forges_result_kills_judge.py", "", "verify",
                Expect("crashed", None, ("not written by the harness",)))  # fmt: skip
    assert check(case, run(case, "cpu", "small"), on_gpu=False) is None


def test_a_detached_process_a_kernel_starts_is_seen_and_ended(detached_left) -> None:
    """A double fork leaves no trace among the call's children, but the runner adopts the grandchild: the
    call fails for the process it left running, and the process ends with the runner."""
    for name in ("detached_process.py", "detached_past_the_runner.py"):
        case = next(c for c in CASES if c.kernel.endswith(name))
        assert check(case, run(case, "cpu", "small"), on_gpu=False) is None
        left = detached_left()
        assert left == [], f"processes {name} started outlived its verification: {left}"


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_adversarial_kernel_is_rejected_on_gpu(case: Case) -> None:
    if case.expected(on_gpu=True) is None:
        pytest.skip("nothing to catch on a GPU")
    if case.landlock and landlock_abi() < 1:
        pytest.skip("needs Landlock, which this kernel lacks")
    problem = check(case, run(case, "cuda", case.gpu_shapes), on_gpu=True)
    assert problem is None, problem


KA_RMSNORM_CASE = Case(os.path.relpath(KA_RMSNORM, KERNELS), "KernelAgent's RMSNorm input kernel: normalises in place",
                       "verify", None, gpu=Expect("incorrect", "inputs_unchanged", ("input 0 was modified",)),
                       label="kernelagent_rmsnorm_input")  # fmt: skip


@pytest.mark.gpu
def test_kernelagent_rmsnorm_input_kernel_is_still_rejected_for_changing_its_input() -> None:
    # It refuses CPU tensors ("x must be on CUDA device"), so this runs on a GPU only.
    if not KA_RMSNORM.is_file():
        pytest.skip(f"{KA_RMSNORM} is absent (KernelAgent's published kernels are kept out of the repository)")
    assert check(KA_RMSNORM_CASE, run(KA_RMSNORM_CASE, "cuda", "small"), on_gpu=True) is None
