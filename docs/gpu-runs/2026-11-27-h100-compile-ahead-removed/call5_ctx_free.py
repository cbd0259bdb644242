"""Probe: can the compile pass (Triton warm-up on meta tensors) run without making a CUDA context?
Run as: python .gpu/s28/ctx_free.py {plain|nostream} in a fresh process, with a fresh TRITON_CACHE_DIR."""
import ctypes, os, subprocess, sys, time
T0 = time.perf_counter()
cuda = ctypes.CDLL("libcuda.so.1")
def state(tag):
    flags, active = ctypes.c_uint(), ctypes.c_int()
    rc = cuda.cuDevicePrimaryCtxGetState(0, ctypes.byref(flags), ctypes.byref(active))
    mem = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    mine = [l for l in mem.splitlines() if l.split(",")[0].strip() == str(os.getpid())]
    print(f"{time.perf_counter()-T0:7.3f}s {tag:<28} ctx rc={rc} active={active.value} nvidia-smi={mine}", flush=True)
t = time.perf_counter(); rc = cuda.cuInit(0); print(f"cuInit rc={rc} {time.perf_counter()-t:.3f}s")
state("after cuInit")
sys.path.insert(0, os.getcwd())
import torch, triton  # noqa: E402
state("imported torch, triton")
torch.cuda.current_device(); state("current_device")
torch.cuda.get_device_capability(); state("get_device_capability")
from triton.runtime import driver  # noqa: E402
d = driver.active
state("driver.active")
if sys.argv[1] == "nostream":
    d.get_current_stream = lambda device=None: 0
from workers.harness.compile_ahead import compile_ahead, WARM_UP_KERNEL  # noqa: E402
t = time.perf_counter()
names, stopped = compile_ahead(WARM_UP_KERNEL, [torch.empty(4096, dtype=torch.bfloat16, device="meta")], {})
print(f"warm-up kernel pass {time.perf_counter()-t:.3f}s {names} stopped={stopped!r}")
state("after warm-up pass")
kern = sys.argv[2] if len(sys.argv) > 2 else ""
if kern:
    a = torch.empty(4096, 4096, dtype=torch.bfloat16, device="meta")
    t = time.perf_counter()
    names, stopped = compile_ahead(kern, [a, a], {})
    print(f"{kern} pass {time.perf_counter()-t:.3f}s {names} stopped={stopped!r}")
    state("after kernel pass")
print(f"cache files: {sum(len(f) for _, _, f in os.walk(os.environ['TRITON_CACHE_DIR']))}")
