"""What a table of times depends on, read in a worker or a command-line tool: the GPU, its driver and
the versions of the software around the kernel."""

from __future__ import annotations


def environment(device: str) -> dict[str, str]:
    """What a table of times depends on: GPU, CUDA driver, torch, triton, python ('' where unknown)."""
    import platform
    import subprocess
    from importlib.metadata import PackageNotFoundError, version

    import torch

    def package(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return ""

    gpu, driver = "cpu", ""
    if device.startswith("cuda") and torch.cuda.is_available():
        gpu = torch.cuda.get_device_name(torch.device(device))
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout  # fmt: skip
            driver = out.splitlines()[0].strip() if out.strip() else ""
        except (OSError, subprocess.SubprocessError):
            driver = ""
    return {"gpu": gpu, "driver": driver, "cuda": torch.version.cuda or "", "torch": torch.__version__,
            "triton": package("triton"), "python": platform.python_version(), "beamsearch": package("beamsearch")}  # fmt: skip
