"""The program ncu runs: one call of kernel_function, bracketed by cudaProfilerStart/Stop.

``ncu --profile-from-start off ... python -m profiling.ncu_child``, a ``workers.harness.child_process`` job
(request on stdin, signed result), run only through ``profiling.ncu.profile_kernel``. The first
call compiles and warms up outside the profiled range; the second is profiled, under the GPU lock. A
Triton launch hook records the names of the kernels the call launched, so the parent keeps those and
never mistakes a PyTorch kernel (an input conversion, a copy) for the candidate's.
"""

from __future__ import annotations

import time
import traceback

import torch
import triton

from beamsearch.records.schema import ProfiledCall, ProfileRequest
from workers.harness.binding import bind, model_values
from workers.harness.child_process import serve, use_one_work_queue
from workers.harness.gpu_lock import gpu_in_use, gpu_lock
from workers.harness.problem_instance import (
    instantiate,
    load_kernel_function,
    load_problem_module,
    select_device,
)
from workers.harness.steps import Steps


def profile_one_call(req: ProfileRequest, steps: Steps) -> ProfiledCall:
    select_device(req.spec)
    # The GPU's use, shared like every GPU job's (set aside while profiling): others' timings wait for it.
    with gpu_in_use(req.spec.device, req.lock_dir), torch.no_grad():
        instance = instantiate(load_problem_module(req.spec), req.spec, req.seed)
        steps.end("inputs")
        call = bind(load_kernel_function(req.kernel_path), instance.inputs, model_values(instance.model))
        launched: list[str] = []
        call()  # compile and warm up, not profiled
        torch.cuda.synchronize()
        steps.end("first_call")
        triton.knobs.runtime.launch_enter_hook = lambda meta: launched.append(meta.data["name"])
        with gpu_lock(req.spec.device, req.lock_dir) as waited_s:
            torch.cuda.cudart().cudaProfilerStart()
            call()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
        triton.knobs.runtime.launch_enter_hook = None
    steps.end("profiled")
    return ProfiledCall(status="ok", own_kernels=sorted(set(launched)), lock_wait_s=waited_s, steps_s=steps.ended)


def handle(request: ProfileRequest) -> ProfiledCall:
    steps = Steps(request.handed_over_at or time.time(), clock=time.time)
    steps.end("job_read")  # about 0 when a spare was waiting; ncu, Python and torch start-up otherwise
    try:
        return profile_one_call(request, steps)
    except BaseException as e:  # noqa: BLE001 - the kernel may raise anything; report it
        return ProfiledCall(status="failed", reason=f"{type(e).__name__}: {e}".splitlines()[0][:500] + "\n"
                            + traceback.format_exc()[-2000:], steps_s=steps.ended)  # fmt: skip


if __name__ == "__main__":
    use_one_work_queue()  # nothing is timed here
    # A normal exit (no os._exit): ncu's injected library finishes its report at process exit. No CUDA
    # context made while idle: every worker keeps one of these waiting (``start_ncu_spare``), and a
    # context would hold about 0.5 GB of GPU memory each for a job that comes once a round at most.
    serve(ProfileRequest, handle, exit_normally=True, early_cuda=False)
