"""Replay of recorded runs: our trace layout and KernelAgent's (kernel.py or opt_reply.txt per round)."""

from __future__ import annotations

import pytest

from beamsearch.records.schema import Attempt, Diagnosis, Kernel
from beamsearch.records.trace_archive import pack_trace
from workers.proposers.replay import ReplayProposer, recorded_rounds

NONE = Diagnosis(bottlenecks=[], source="rules")
PARENT = Kernel(source="# parent\n", origin="input")


def kernel_text(tag: str) -> str:
    return f"def kernel_function(x):\n    return x  # {tag}\n"


def test_rounds_in_order_from_each_layout(tmp_path) -> None:
    trace = tmp_path / "optimization_trace"
    (trace / "round_1").mkdir(parents=True)
    (trace / "round_1" / "kernel.py").write_text(kernel_text("r1"))
    (trace / "round_2").mkdir()
    (trace / "round_2" / "opt_reply.txt").write_text(f"Here it is:\n```python\n{kernel_text('r2')}```\n")
    for cid in ("r10-t0", "r10-t1"):
        (trace / "round_10" / "candidates" / cid).mkdir(parents=True)
        (trace / "round_10" / "candidates" / cid / "kernel.py").write_text(kernel_text(cid))
    replay = ReplayProposer(tmp_path)
    tags = [[k.source.split("# ")[1].strip() for k in replay.propose(PARENT, NONE, [])] for _ in range(4)]
    assert tags == [["r1"], ["r2"], ["r10-t0", "r10-t1"], []]  # 10 after 2: numeric order


def test_a_published_folder_is_replayed_from_its_trace_archive(tmp_path) -> None:
    """``beamsearch.publish`` keeps the trace as optimization_trace.tar.xz: the rounds are read from it."""
    for n in (1, 2):
        (tmp_path / "optimization_trace" / f"round_{n}").mkdir(parents=True)
        (tmp_path / "optimization_trace" / f"round_{n}" / "kernel.py").write_text(kernel_text(f"r{n}"))
    pack_trace(tmp_path)
    rounds = recorded_rounds(tmp_path)
    assert [[k.source for k in r] for r in rounds] == [[kernel_text("r1")], [kernel_text("r2")]]
    assert rounds[0][0].note == f"replay of {tmp_path / 'optimization_trace.tar.xz'}/optimization_trace/round_1/kernel.py"


def test_already_tried_kernels_are_skipped_and_parent_is_set(tmp_path) -> None:
    (tmp_path / "round_1").mkdir()
    (tmp_path / "round_1" / "kernel.py").write_text(kernel_text("r1"))
    seen = Kernel(source=kernel_text("r1"), origin="replay")
    assert ReplayProposer(tmp_path).propose(PARENT, NONE, [Attempt(kernel_hash=seen.hash, note="", outcome="ok")]) == []
    (k,) = ReplayProposer(tmp_path).propose(PARENT, NONE, [])
    assert k.parent_hash == PARENT.hash and k.origin == "replay"


def test_missing_or_empty_trace_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="not a folder"):
        ReplayProposer(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no round_N folders"):
        ReplayProposer(tmp_path)
