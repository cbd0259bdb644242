"""beamsearch.publish: a finished run's folder into the published layout, without per-candidate files."""

from __future__ import annotations

import tarfile

import pytest

from beamsearch import report as rep
from beamsearch.publish import PublishError, main, publish
from beamsearch.records.trace_archive import TRACE_ARCHIVE, pack_trace, unpacked_trace
from tests.test_report import PROBLEM, assert_png, record_run


def files(folder) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def archived(folder) -> set[str]:
    """The files inside the folder's trace archive, by their paths once unpacked."""
    with tarfile.open(folder / TRACE_ARCHIVE) as tar:
        return {m.name for m in tar.getmembers() if m.isfile()}


def test_publish_copies_the_rounds_and_writes_the_report(tmp_path) -> None:
    run = tmp_path / "runs" / PROBLEM / "20260101T000000Z"
    record_run(run)
    (run / "events.jsonl").write_text("{}\n")
    dest = tmp_path / "artifacts" / PROBLEM
    dest.mkdir(parents=True)
    (dest / "problem.py").write_text("# the problem's own\n")
    (dest / "README.md").write_text("# RMSNorm\n\nHand-written.\n")
    before = files(run)
    assert publish(run, dest) == dest
    assert files(run) == before  # the run folder is only read
    published = files(dest)
    assert not [f for f in published if "optimization_trace/" in f], "the trace is one archive"
    published |= archived(dest)
    assert not [f for f in published if "/candidates/" in f], "per-candidate files were published"
    assert {"events.jsonl", "state.json"}.isdisjoint(published)
    for n in (1, 3, 4):
        assert {
            f"optimization_trace/round_{n}/{name}"
            for name in ("round.json", "kernel.py", "benchmark_results.json")
        } <= published
    assert (
        "optimization_trace/round_2/round.json" in published
    )  # a round where nothing passed is still recorded
    assert {
        "summary.json",
        "optimized_kernel_beam_search.py",
        "convergence.png",
        "input_kernel.py",
    } <= published
    assert (dest / "problem.py").read_text() == "# the problem's own\n"  # inputs kept
    assert (dest / "input_kernel.py").read_text() == (run / "optimization_trace/input/kernel.py").read_text()
    assert (dest / "optimized_kernel_beam_search.py").read_text() == (
        run / "optimized_kernel_beam_search.py"
    ).read_text()
    assert_png(dest / "convergence.png")
    text = (dest / "README.md").read_text()
    assert text.startswith("# RMSNorm\n\nHand-written.\n\n" + rep.START)
    assert "Round 3: `r3-t0` at 1.610 ms" in text and "Its change: BLOCK change r3-t0" in text
    # the best candidate's profile is found in the round it won, now that its own folder stays behind
    assert "| Kernel duration | 2.500 ms | 1.600 ms | 0.64x |" in text
    assert "candidates/" not in text  # no link to a folder that was not published
    assert "`optimization_trace/round_3/` in [optimization_trace.tar.xz](optimization_trace.tar.xz)" in text
    assert not list(dest.glob(".publishing-*"))


def test_publish_refuses_to_overwrite_and_unfinished_runs(tmp_path, capsys) -> None:
    run, dest = tmp_path / "run", tmp_path / "dest"
    record_run(run)
    publish(run, dest)
    kept = (dest / "summary.json").read_text()
    with pytest.raises(PublishError, match="already holds published results.*--force"):
        publish(run, dest)
    (dest / "optimization_trace/round_4").mkdir(parents=True)  # an archive unpacked by hand, and an old file
    (dest / "optimization_trace/round_4/stale.txt").write_text("from an older publication")
    publish(run, dest, force=True)
    assert (dest / "summary.json").read_text() == kept and not (dest / "optimization_trace").exists()
    assert "optimization_trace/round_4/stale.txt" not in archived(dest)
    cut_short = tmp_path / "cut"
    record_run(cut_short, summary=False)
    with pytest.raises(SystemExit) as exit_:
        main([str(cut_short), "--to", str(tmp_path / "other")])
    assert exit_.value.code == 2 and "no summary.json" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_a_run_is_not_published_onto_itself(tmp_path) -> None:
    """Replacing the destination's results would delete the run's own files before they are copied."""
    run = tmp_path / PROBLEM
    record_run(run)
    before = files(run)
    with pytest.raises(PublishError, match="the run folder itself"):
        publish(run, run, force=True)
    assert files(run) == before


def test_the_trace_archive_is_the_same_bytes_every_time_and_reads_back_as_the_folder(tmp_path) -> None:
    """Republishing one run writes the same archive; reading it gives back every file as it was."""
    run = tmp_path / "run"
    record_run(run)
    copies = []
    for name in ("a", "b"):
        folder = tmp_path / name
        (folder / "optimization_trace").mkdir(parents=True)
        for f in (run / "optimization_trace").rglob("*"):
            if f.is_file() and "candidates" not in f.parts:
                target = folder / f.relative_to(run)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(f.read_bytes())
        copies.append(pack_trace(folder))
        assert not (folder / "optimization_trace").exists()
    assert copies[0].read_bytes() == copies[1].read_bytes()
    with unpacked_trace(tmp_path / "a") as trace:
        back = {p.relative_to(trace).as_posix(): p.read_bytes() for p in trace.rglob("*") if p.is_file()}
    original = {p.relative_to(run / "optimization_trace").as_posix(): p.read_bytes()
                for p in (run / "optimization_trace").rglob("*") if p.is_file() and "candidates" not in p.parts}  # fmt: skip
    assert back == original and back
    assert not trace.exists()  # the temporary copy is gone with the context
