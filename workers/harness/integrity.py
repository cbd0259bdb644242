"""Evidence of tampering and of work left running, for processes that import a candidate kernel.

A kernel runs Python in the process that observes it, so it can replace the functions that process
relies on (``torch.allclose``, ``torch.cuda.Event``, ``triton.testing.do_bench``, our own ``workers.*``
functions) or leave threads and processes working after its call returns. Neither can be prevented from
inside the process; both can be noticed:

- ``Snapshot.take()`` before the kernel is imported records which object every watched name refers to
  (the callables, classes and submodules of the watched modules, the methods of the watched classes, and
  every ``workers.*`` / ``beamsearch.*`` module and the classes they define); ``changed()`` lists the
  names that refer to something else now. New names (a submodule imported later) are not changes.
- ``BackgroundWork`` remembers the Python threads and child processes alive before the import and lists
  those alive now that were not; ``ThreadStarts`` counts the threads started while it is entered (the
  thread starters are wrapped once by ``install_thread_tripwire``, before the kernel is imported).

A kernel written to defeat these (restoring what it patched before it returns, hiding a thread from
``threading``) still can; that is why the comparison and the verdict are made in another process.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

WATCHED_MODULES = (
    "builtins", "time", "os", "threading", "_thread", "json", "hmac",
    "torch", "torch._C", "torch._C._autograd", "torch.autograd", "torch.autograd.profiler", "torch.cuda",
    "torch.nn.functional", "torch.testing", "torch.utils._python_dispatch", "torch.multiprocessing",
    "triton", "triton.testing", "triton.runtime.jit",
)  # fmt: skip
OWN_PREFIXES = ("workers.", "beamsearch.")
# Rewrapped by torch itself when torch._dynamo is first imported (a kernel may import it); nothing that
# judges a kernel relies on it (inputs are seeded before the kernel is imported, or in another process).
UNWATCHED = frozenset({"torch.manual_seed"})
_MISSING = object()


def _watched_classes() -> list[type]:
    classes: list[type] = []
    torch = sys.modules.get("torch")
    if torch is not None:
        classes += [torch.Tensor, torch.nn.Module, torch.cuda.Event, torch.cuda.Stream]
        dispatch = sys.modules.get("torch.utils._python_dispatch")
        if dispatch is not None:
            classes.append(dispatch.TorchDispatchMode)
    return classes


def _worth_watching(value: Any) -> bool:
    return callable(value) or isinstance(value, (type(sys), staticmethod, classmethod, property))


class Snapshot:
    """Which object each watched name refers to, taken before a kernel is imported."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any, str, Any]] = []  # (label, container, attribute, object)
        self.modules: dict[str, Any] = {}

    @classmethod
    def take(cls) -> Snapshot:
        """Imports the watched modules first, so a kernel that imports one finds it already watched."""
        snap = cls()
        for name in WATCHED_MODULES:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        names = [n for n in WATCHED_MODULES if n in sys.modules]
        names += sorted(n for n in list(sys.modules) if n.startswith(OWN_PREFIXES))
        classes = _watched_classes()
        for name in names:
            module = sys.modules[name]
            snap.modules[name] = module
            for attr, value in list(vars(module).items()):
                if _worth_watching(value) and f"{name}.{attr}" not in UNWATCHED:
                    snap.entries.append((f"{name}.{attr}", module, attr, value))
                if name.startswith(OWN_PREFIXES) and isinstance(value, type) and value.__module__ == name:
                    classes.append(value)
        for klass in classes:
            for attr, value in list(vars(klass).items()):
                if _worth_watching(value):
                    snap.entries.append((f"{klass.__module__}.{klass.__qualname__}.{attr}", klass, attr, value))
        return snap

    def changed(self) -> list[str]:
        """Watched names that now refer to another object, or are gone."""
        found = [f"sys.modules[{name!r}]" for name, m in self.modules.items() if sys.modules.get(name) is not m]
        for label, container, attr, value in self.entries:
            try:
                now = vars(container).get(attr, _MISSING)
            except TypeError:
                now = _MISSING
            if now is not value:
                found.append(label)
        return found


def python_threads() -> set[int]:
    """Identifiers of the threads running Python code (``threading`` and ``_thread`` ones alike)."""
    return set(sys._current_frames()) | {t.ident for t in threading.enumerate() if t.ident is not None}


def child_processes() -> set[int]:
    """Process ids of this process's children (Linux: from /proc), empty where that is not readable."""
    pids: set[int] = set()
    try:
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            text = (task / "children").read_text()
            pids.update(int(p) for p in text.split())
    except OSError:
        pass
    return pids


class BackgroundWork:
    """Threads and child processes alive now that were not alive when this was made."""

    def __init__(self) -> None:
        self.threads = python_threads()
        self.processes = child_processes()

    def left_running(self) -> list[str]:
        names = {t.ident: t.name for t in threading.enumerate()}
        found = [f"thread {names.get(i, i)}" for i in sorted(python_threads() - self.threads)]
        found += [f"process {pid}" for pid in sorted(child_processes() - self.processes) if running(pid)]
        return found


def running(pid: int) -> bool:
    """Alive: neither a zombie nor dead."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


# ---------------------------------------------------------------------------------- thread starts

_counters: list[ThreadStarts] = []
_tripwire_installed = False


class ThreadStarts:
    """Counts the threads started (by ``threading`` or ``_thread``) while entered."""

    def __init__(self) -> None:
        self.n = 0

    def __enter__(self) -> ThreadStarts:
        install_thread_tripwire()
        _counters.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _counters:
            _counters.remove(self)


def install_thread_tripwire() -> None:
    """Wrap ``_thread.start_new_thread`` (what ``threading.Thread.start`` calls) once."""
    global _tripwire_installed
    if _tripwire_installed:
        return
    _tripwire_installed = True
    import _thread

    starter = _thread.start_new_thread

    def start_new_thread(*args: Any, **kwargs: Any) -> Any:
        for counter in _counters:
            counter.n += 1
        return starter(*args, **kwargs)

    _thread.start_new_thread = start_new_thread
    threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]
