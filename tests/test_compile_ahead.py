"""Compiling a kernel before its verification takes a GPU place (``workers.harness.compile_ahead``): the
runner's pass over a second import on meta tensors, Triton's launches turned into compiles, and the judge's
side. The compile itself needs a GPU: ``tests/test_verify_gpu.py`` times it there."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from beamsearch.records.schema import DEFAULT_TOLERANCES, RunSpec, VerifyRequest
from tests.conftest import DATA, KERNELS
from workers.harness.child_process import EARLY_CUDA_INIT
from workers.harness.compile_ahead import (
    MODULE_NAME,
    StoppedLaunch,
    compile_ahead,
    launches_compile_only,
    warm_up_pass,
)
from workers.harness.problem_instance import load_kernel_function, load_problem_module
from workers.harness.runner_messages import CompileReply

KERNEL = '''
import torch
SEEN = []
_buffers = {}

def kernel_function(x, weight):
    SEEN.append((x.device.type, tuple(x.shape), weight.device.type))
    _buffers.setdefault(tuple(x.shape), torch.empty_like(x))  # a module-level cache of what it was given
    return torch.empty_like(x)
'''


def test_the_pass_calls_a_second_import_on_meta_tensors_and_drops_it(tmp_path) -> None:
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    first = sys.modules[load_kernel_function(path).__module__]
    x, w = torch.empty(4, 8, device="meta"), torch.empty(8, device="meta")
    compiled, stopped = compile_ahead(path, [x], {"weight": w})
    assert (compiled, stopped) == ([], "")
    assert first.SEEN == [] and first._buffers == {}, "the checked import never sees the meta tensors"
    assert MODULE_NAME not in sys.modules


def test_a_module_the_copy_imports_first_is_dropped_with_it(tmp_path, monkeypatch) -> None:
    (tmp_path / "helper_only_for_the_pass.py").write_text("CACHE = []\n")
    path = tmp_path / "k.py"
    path.write_text("def kernel_function(x):\n    import helper_only_for_the_pass as h\n    h.CACHE.append(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert compile_ahead(path, [torch.empty(2, device="meta")], {}) == ([], "")
    assert "helper_only_for_the_pass" not in sys.modules


def test_whatever_stops_the_pass_is_its_reason_not_an_error(tmp_path) -> None:
    path = tmp_path / "k.py"
    path.write_text("def kernel_function(x):\n    return x.sum().item()\n")
    compiled, stopped = compile_ahead(path, [torch.empty(4, device="meta")], {})
    assert compiled == [] and stopped.startswith("RuntimeError") and "meta" in stopped, stopped
    path.write_text("kernel_function = 3\n")
    assert compile_ahead(path, [], {}) == ([], "no callable kernel_function")
    path.write_text("raise SystemExit(3)\n")
    assert compile_ahead(path, [], {})[1] == "SystemExit: 3"
    assert MODULE_NAME not in sys.modules


def test_a_jit_launch_becomes_a_compile_and_an_autotuned_one_stops_the_pass(monkeypatch) -> None:
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    def scale(x_ptr, n):  # never compiled here: the launch is recorded
        pass

    from triton.compiler.compiler import CompiledKernel

    seen = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *a, grid, warmup, **k: seen.append(warmup))
    before = JITFunction.run, Autotuner.run, CompiledKernel.__getitem__
    kernel = JITFunction(scale)
    with launches_compile_only() as compiled:
        kernel[(1,)](torch.empty(4, device="meta"), 4)
        with pytest.raises(StoppedLaunch, match="autotuned"):
            Autotuner.run(object())
        with pytest.raises(StoppedLaunch, match="handle"):
            CompiledKernel.__getitem__(object(), (1,))
    assert seen == [True] and compiled == ["scale"]
    with pytest.raises(RuntimeError), launches_compile_only():
        raise RuntimeError("the kernel raised")
    assert (JITFunction.run, Autotuner.run, CompiledKernel.__getitem__) == before, "restored, after a raise too"


class _RecordingKernel:
    def __init__(self, reply: CompileReply) -> None:
        self.reply, self.sent = reply, []

    def compile_ahead(self, kernel_path, inputs, values) -> CompileReply:
        self.sent.append((kernel_path, inputs, values))
        return self.reply


def _request(device: str) -> VerifyRequest:
    spec = RunSpec(problem_path=str(DATA / "scale_rows_problem.py"), shapes="full", device=device, dtype="bf16")
    return VerifyRequest(spec=spec, kernel_path=str(KERNELS / "good.py"), seeds=[5, 6, 7],
                         tolerance=DEFAULT_TOLERANCES["bf16"])  # fmt: skip


def test_the_judge_sends_the_first_seeds_full_shapes_and_reads_the_evidence_as_a_calls() -> None:
    from workers.harness import verify_child

    req = _request("cuda")
    module = load_problem_module(req.spec)
    clean = CompileReply(compiled=["scale_kernel"], stopped="", threads_started=0, tampering=[], background=[])
    kernel, checks = _RecordingKernel(clean), verify_child.Checks()
    verify_child._compile_ahead(req, module, kernel, checks)
    (path, inputs, values), = kernel.sent
    real = verify_child.instantiate(module, req.spec.model_copy(update={"device": "meta"}), 5)
    assert path == req.kernel_path and [t.shape for t in inputs] == [t.shape for t in real.inputs]
    assert all(t.device.type == "meta" for t in inputs) and "compiled_ahead" in checks.steps.ended
    assert checks.compiled_ahead == ["scale_kernel"] and checks.compile_ahead_stopped == ""
    threaded = clean.model_copy(update={"threads_started": 1})
    with pytest.raises(verify_child.Failed, match="compiled ahead"):
        verify_child._compile_ahead(req, module, _RecordingKernel(threaded), verify_child.Checks())
    on_cpu = _RecordingKernel(clean)
    verify_child._compile_ahead(_request("cpu"), module, on_cpu, verify_child.Checks())
    assert on_cpu.sent == [], "the interpreter compiles nothing"


def test_the_runner_answers_a_compile_only_after_a_load_and_on_the_cpu_compiles_nothing(monkeypatch, tmp_path) -> None:
    from workers.harness.kernel_runner import KernelProcess
    from workers.harness.runner_messages import CompileRequest, ErrorReply, LoadRequest, read_reply
    from workers.harness.shared_tensors import encode_value

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as child_process sets it for a CPU child
    monkeypatch.chdir(tmp_path)  # the runner's working folder: its writes and temporary files go there
    runner = KernelProcess.fork()
    try:
        tensors: list[torch.Tensor] = []
        body = CompileRequest(kernel_path=str(KERNELS / "good.py"),
                              inputs=[encode_value(torch.empty(4, 8, device="meta"), tensors)])  # fmt: skip
        early, _ = runner.request(body.model_dump(mode="json"), tensors)
        assert isinstance(read_reply("compile", early), ErrorReply)
        runner.request(LoadRequest(kernel_path=str(KERNELS / "good.py"), device="cpu").model_dump(mode="json"))
        reply = read_reply("compile", runner.request(body.model_dump(mode="json"), tensors)[0])
        assert isinstance(reply, CompileReply) and reply.stopped == "not on a GPU" and reply.compiled == []
    finally:
        runner.stop()


WARMED_PASS = """
import sys, torch
from workers.harness.child_process import start_cuda_early
assert start_cuda_early()
from workers.harness.compile_ahead import compile_ahead, warm_up_pass
from triton.runtime.cache import triton_key
warm_up_pass()
assert triton_key.cache_info().misses == 1, "Triton hashed its installation in the warm-up"
before = set(sys.modules)
compiled, stopped = compile_ahead(sys.argv[1], [torch.empty(64, 1000, dtype=torch.bfloat16, device="meta")], {})
assert compiled and not stopped, (compiled, stopped)
new = {m.split(".")[0] for m in set(sys.modules) - before}
assert "sympy" not in new and "torch" not in new, sorted(new)
assert triton_key.cache_info().misses == 1, "and not again in the candidate's pass"
"""


@pytest.mark.gpu
def test_a_waiting_runners_warm_up_leaves_a_candidates_pass_only_its_own_compile(tmp_path) -> None:
    """What a process's first pass pays whatever the kernel (meta tensors' first use through PyTorch's
    Python references, Triton's key of its installation) is paid in the warm-up a waiting runner runs."""
    env = {**os.environ, EARLY_CUDA_INIT: "cuda"}
    kernel = DATA.parent.parent / "artifacts" / "26_GELU_" / "input_kernel.py"
    done = subprocess.run([sys.executable, "-c", WARMED_PASS, str(kernel)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=DATA.parent.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_warm_up_pass_that_stops_says_why(tmp_path, monkeypatch) -> None:
    """A warm-up pass that stops early (a Triton that changed, no GPU) raises with the pass's reason, which
    the waiting process logs (``child_process.warm_up_early``), and leaves no import behind."""
    reads_values = tmp_path / "k.py"
    reads_values.write_text("def kernel_function(x):\n    return x.sum().item()\n")
    monkeypatch.setattr("workers.harness.compile_ahead.WARM_UP_KERNEL", reads_values)
    with pytest.raises(RuntimeError, match="the warm-up's compile pass stopped: RuntimeError.*meta"):
        warm_up_pass()
    assert MODULE_NAME not in sys.modules
