"""Confining a process that runs a candidate kernel: writes to a few folders only, no signals out.

Linux Landlock (5.13+; no privileges needed): once ``confine`` has run, this process and its children
may create, write, truncate, rename or delete files only beneath the folders given (the job's folder,
Triton's and CUDA's caches, /dev for the GPU's device files and shared memory), so a kernel cannot plant
files in trace folders, rewrite the harness's source for later runs, or touch another job's folder.
Reading is not restricted. From Landlock ABI 6 the process also cannot send signals to processes
outside its sandbox (it cannot kill the verification process that judges it).

Where Landlock is missing (an older kernel, a container that blocks it) nothing is confined and the
description says so; ``BEAMSEARCH_SANDBOX=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import struct
import tempfile
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights that change something; reads and execution stay unrestricted.
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_SCOPE_SIGNAL = 1 << 1

DISABLE_ENV = "BEAMSEARCH_SANDBOX"


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 where there is none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return max(0, libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)))
    except (OSError, AttributeError):
        return 0


def writable_defaults(job_folder: Path) -> list[Path]:
    """What a kernel's process legitimately writes: its job folder, Triton's cache (compiled kernels and
    launchers), CUDA's JIT cache, and /dev (GPU device files, shared memory)."""
    home = Path.home()
    triton_cache = Path(os.environ.get("TRITON_CACHE_DIR", home / ".triton" / "cache"))
    return [job_folder, triton_cache, home / ".triton", home / ".nv", Path("/dev")]


def confine_job(work: Path, extra: list[Path] = ()) -> str:
    """Confine a job's process: temporary files go to ``work``/tmp (Triton's compiler writes its PTX and
    cubins through ``tempfile``), and writes are allowed beneath ``work``, ``extra`` and the caches."""
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(tmp)
    tempfile.tempdir = None  # recomputed from TMPDIR on next use
    return confine([*writable_defaults(work), *extra])


def confine(writable: list[Path]) -> str:
    """Restrict this process (and what it starts) to writing beneath ``writable``. Returns a one-line
    description: 'landlock ABI n: writes only to ...' or why nothing was confined. Never raises."""
    if os.environ.get(DISABLE_ENV, "1") == "0":
        return f"none: turned off ({DISABLE_ENV}=0)"
    abi = landlock_abi()
    if abi < 1:
        return "none: Landlock is not available on this kernel"
    libc = ctypes.CDLL(None, use_errno=True)
    handled = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    handled |= _REFER if abi >= 2 else 0
    handled |= _TRUNCATE if abi >= 3 else 0
    scoped = _SCOPE_SIGNAL if abi >= 6 else 0
    if abi >= 6:
        attr = struct.pack("=QQQ", handled, 0, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled, 0)
    else:
        attr = struct.pack("=Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"none: landlock_create_ruleset failed ({os.strerror(ctypes.get_errno())})"
    allowed: list[str] = []
    try:
        for folder in writable:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(folder, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", handled, fd), 12)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule,
                                ctypes.c_uint32(0)) == 0:  # fmt: skip
                    allowed.append(str(folder))
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"none: no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return f"none: landlock_restrict_self failed ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    signals = ", no signals out" if scoped else ""
    return f"landlock ABI {abi}: writes only beneath {', '.join(allowed)}{signals}"
