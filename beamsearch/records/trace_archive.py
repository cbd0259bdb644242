"""A published trace as one archive: ``optimization_trace.tar.xz`` holds ``optimization_trace/`` as a run
wrote it (the reference layout: ``input/``, ``round_N/`` and their files), so the repository keeps one file
per published problem instead of a hundred, and ``tar -xJf optimization_trace.tar.xz`` in the problem's
folder gives the folder back.

The archive is made the same way every time (sorted entries, no owners, no times), so publishing the same
run twice writes the same bytes.

Shared by the driver's side (publish, report) and the proposers' (a replay reads published traces), so
it imports nothing of ours.
"""

from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

TRACE_DIR = "optimization_trace"  # a run's trace folder, in the reference layout
TRACE_ARCHIVE = f"{TRACE_DIR}.tar.xz"


def pack_trace(folder: Path) -> Path:
    """Replace ``folder/optimization_trace/`` with ``folder/optimization_trace.tar.xz``; returns the archive."""
    trace, archive = folder / TRACE_DIR, folder / TRACE_ARCHIVE
    partial = archive.with_name(archive.name + ".partial")
    with tarfile.open(partial, "w:xz", preset=9) as tar:
        for path in [trace, *sorted(trace.rglob("*"))]:
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if path.is_dir() else 0o644
            if path.is_file():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    partial.replace(archive)
    shutil.rmtree(trace)
    return archive


@contextlib.contextmanager
def unpacked_trace(folder: Path) -> Iterator[Path]:
    """The trace folder of ``folder`` to read from: its own ``optimization_trace/`` when there is one (a run
    folder, or an archive unpacked by hand), else the archive's content unpacked in a temporary folder
    for as long as the context lasts. A folder with neither yields a path that does not exist."""
    if (folder / TRACE_DIR).is_dir() or not (folder / TRACE_ARCHIVE).is_file():
        yield folder / TRACE_DIR
        return
    with tempfile.TemporaryDirectory(prefix="beamsearch-trace-") as tmp:
        with tarfile.open(folder / TRACE_ARCHIVE, "r:xz") as tar:
            tar.extractall(tmp, filter="data")  # paths stay inside tmp, whatever the archive says
        yield Path(tmp) / TRACE_DIR
