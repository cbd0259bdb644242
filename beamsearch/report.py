"""``python -m beamsearch.report FOLDER [...]``: a search's README and convergence plot, and the results index.

``write_report(problem_dir)`` reads what a run left in its folder (``summary.json``, else ``state.json`` of
a run cut short; each ``round_N/round.json``; the input's and the best candidate's
``optimized_ncu_metrics.json``), the trace from ``optimization_trace.tar.xz`` where a published folder has
only the archive (``beamsearch.records.trace_archive``), and writes, between the marker comments below, keeping
the rest:

- ``problem_dir/README.md``: the problem's row of the results table, the running best per round, the best
  round, the input -> optimized Nsight Compute metrics, and ``convergence.png`` (running best per round
  against torch.compile and eager);
- the index ``README.md`` one folder up (``artifacts/README.md`` for a bundled problem, or any folder
  whose README.md already has the markers): the table over every problem folder with a summary.json, and
  the GPU, driver, torch and triton versions.

Missing pieces (no profile, a CPU run without floor, failed rounds, no summary yet) are said in the text;
only a file that cannot be written raises (TraceWriteError).
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from beamsearch.cli_common import EXIT_FAILED, EXIT_PASSED, fail
from beamsearch.convergence import Convergence, plot_convergence
from beamsearch.display import MODEL_COLUMNS, model_rows, result_line
from beamsearch.optimiser import PER_WORKER
from beamsearch.outcome import ratio
from beamsearch.records.problems import ARTIFACTS_DIR, ProblemNotFound, resolve_problem
from beamsearch.records.state import BeamState, FinalTiming, RoundRecord, Summary, TaskResult
from beamsearch.records.trace_archive import TRACE_ARCHIVE, unpacked_trace
from beamsearch.trace import (
    BEST_KERNEL_FILE,
    RESULT_FILE,
    STATE_FILE,
    SUMMARY_FILE,
    TRACE_DIR,
    write_atomic,
)
from profiling import metrics as m

log = logging.getLogger(__name__)

START = "<!-- beamsearch:results:start -->"
END = "<!-- beamsearch:results:end -->"
README = "README.md"
PLOT = "convergence.png"
NCU_FILE = "optimized_ncu_metrics.json"  # a candidate's own profile (the input's too, in trace/input/)
KEY_METRICS = (
    m.DURATION, m.COMPUTE_SOL, m.MEMORY_SOL, m.DRAM_SOL, "dram__bytes.sum.per_second", "dram__bytes_read.sum",
    "dram__bytes_write.sum", "l1tex__t_sector_hit_rate.pct", "lts__t_sector_hit_rate.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread", "launch__shared_mem_per_block_allocated",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", m.TENSOR_PIPE,
)  # fmt: skip
TABLE_HEAD = ("problem", "device", "eager ms", "torch.compile ms", "input ms", "best ms", "vs input", "vs eager",
              "vs torch.compile", "% of floor", "best round", "rounds", "candidates ok", "search time")  # fmt: skip


@dataclass
class Run:
    """What one folder holds, whichever files made it; ``notes`` say what was missing or unreadable."""

    folder: Path
    problem: str
    trace: Path = Path()  # where its optimization_trace/ is read from: in the folder, or its archive unpacked
    summary: Summary | None = None
    state: BeamState | None = None
    rounds: list[RoundRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def archived(self) -> bool:
        """The trace is read from ``optimization_trace.tar.xz``: links point at the archive."""
        return not self.trace.is_relative_to(self.folder)

    @property
    def on_cpu(self) -> bool:
        spec = self.summary.spec if self.summary else self.state.spec if self.state else None
        return spec is not None and not spec.device.startswith("cuda")

    def baseline_ms(self, target: str) -> float | None:
        baselines = self.summary.baselines if self.summary else self.state.baselines if self.state else []
        return next((b.median_ms for b in baselines if target in (b.target, b.label)), None)

    @property
    def input_ms(self) -> float | None:
        if self.summary:
            return self.summary.input_ms
        return self.state.input.ranked_ms if self.state and self.state.input else None

    @property
    def start_ms(self) -> float | None:
        """The input kernel as measured at the start (round 0), next to which the rounds were measured."""
        folder = self.trace / "input"
        measured = _load(TaskResult, folder / RESULT_FILE, []) if (folder / RESULT_FILE).is_file() else None
        if measured is not None and measured.ranked_ms is not None:
            return measured.ranked_ms
        return self.state.input.ranked_ms if self.state and self.state.input else self.input_ms

    @property
    def best(self) -> tuple[str | None, float | None, int | None]:
        """(id, ms, round) of the best kernel: the summary's (re-timed), else the fastest in the beam."""
        if self.summary:
            return self.summary.best_id, self.summary.best_ms, self.summary.best_round
        entries = [e for e in (self.state.beam if self.state else []) if e.ranked_ms]
        e = min(entries, key=lambda e: e.ranked_ms, default=None)
        return (e.id, e.ranked_ms, e.round) if e else (None, None, None)

    @property
    def floor_ms(self) -> float | None:
        floor = self.summary.floor if self.summary else self.state.floor if self.state else None
        return floor.floor_ms if floor else None


def load_run(folder: Path, trace: Path | None = None) -> Run:
    """What ``folder`` holds; ``trace``: where its trace folder is (default ``folder/optimization_trace``)."""
    folder = Path(folder)
    run = Run(folder=folder, problem=folder.resolve().name, trace=trace or folder / TRACE_DIR)
    if (folder / SUMMARY_FILE).is_file():
        run.summary = _load(Summary, folder / SUMMARY_FILE, run.notes)
    if run.summary is None and (folder / STATE_FILE).is_file():
        run.state = _load(BeamState, folder / STATE_FILE, run.notes)
        if run.state is not None:
            run.notes.append("no summary.json (the run is still going or was cut short): figures from state.json")
    recorded = run.summary or run.state
    if recorded:
        run.problem = recorded.problem
    rounds = {r.round: r for r in (recorded.rounds if recorded else [])}
    for path in sorted(run.trace.glob("round_*/round.json")):
        record = _load(RoundRecord, path, run.notes)
        if record is not None and record.round not in rounds:
            rounds[record.round] = record
    run.rounds = [rounds[k] for k in sorted(rounds)]
    if recorded is None and not run.rounds:
        run.notes.append("nothing recorded yet: no summary.json, state.json or round.json")
    return run


def _load(model, path: Path, notes: list[str]):
    try:
        return model.model_validate_json(path.read_text())
    except (OSError, ValueError) as e:
        notes.append(f"{path.name} unreadable: {str(e).splitlines()[0]}")
        return None


# ----------------------------------------------------------------------------------------- the table row


def row_cells(run: Run, link: bool = False) -> list[str]:
    """The problem's row of the results table (TABLE_HEAD), its name a link to its README in the index.
    Ratios against PyTorch only for GPU runs."""
    s = run.summary
    best_id, best_ms, best_round = run.best
    input_ms = run.input_ms
    vs_input = s.speedup_vs_input if s else ratio(input_ms, best_ms)
    vs_eager = s.speedup_vs_eager if s else ratio(run.baseline_ms("eager"), best_ms)
    vs_compile = s.speedup_vs_compile if s else ratio(run.baseline_ms("compile"), best_ms)
    pct = s.pct_of_floor if s else (100.0 * run.floor_ms / best_ms if run.floor_ms and best_ms else None)
    if run.on_cpu:
        vs_eager = vs_compile = None  # the interpreter against native PyTorch: no GPU meaning
    candidates = (s.candidates_ok, s.candidates) if s else (sum(r.ok for r in run.rounds), sum(r.tasks for r in run.rounds))
    wall = s.wall_s if s else run.state.elapsed_s if run.state else None
    name = f"[`{run.problem}`]({run.folder.name}/{README})" if link else f"`{run.problem}`"
    return [name, _device(run), fmt_ms(run.baseline_ms("eager")), fmt_ms(run.baseline_ms("compile")), fmt_ms(input_ms),
            fmt_ms(best_ms), fmt_x(vs_input), fmt_x(vs_eager), fmt_x(vs_compile), fmt_pct(pct),
            "-" if best_round is None else f"{best_round} (`{best_id}`)", str(len(run.rounds)),
            f"{candidates[0]}/{candidates[1]}", "-" if wall is None else f"{wall / 60:.1f} min"]  # fmt: skip


def _device(run: Run) -> str:
    gpu = run.summary.gpu_name if run.summary else run.state.gpu_name if run.state else ""
    return "CPU (interpreter)" if run.on_cpu else (gpu or "?")


def md_table(head: tuple[str, ...] | list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows])


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if v >= 1 else f"{v:.4g}"


def fmt_x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def fmt_pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} %"



def environment_line(run: Run) -> str:
    recorded = run.summary or run.state
    if recorded is None:
        return ""
    v = run.summary.versions if run.summary else {}
    names = {"driver": "driver", "cuda": "CUDA", "torch": "torch", "triton": "triton", "python": "python", "ray": "ray"}
    parts = [_device(run)] + [f"{name} {v[k]}" for k, name in names.items() if v.get(k)]
    spec = recorded.spec
    # a run's own values rule (--atol/--rtol) is part of what its numbers mean
    rule = f", values within atol {spec.tolerance.atol:g} + rtol {spec.tolerance.rtol:g}" if spec.tolerance else ""
    return ", ".join(parts) + f"; {spec.dtype}, {spec.shapes} shapes{rule}"


# ----------------------------------------------------------------------------------------- per problem


def write_report(problem_dir: Path, index_dir: Path | None = None, *, index: bool = True) -> Path:
    """Write ``problem_dir``'s README.md and convergence.png, then the index (see the module docstring).

    ``index_dir`` defaults to the parent folder when it is the bundled artifacts/ or already holds the
    markers. Returns the problem README's path. Raises TraceWriteError only when a file cannot be written.
    """
    problem_dir = Path(problem_dir)
    with unpacked_trace(problem_dir) as trace:
        run = load_run(problem_dir, trace)
        has_plot = bool(run.summary or run.state or run.rounds)
        if has_plot:
            plot_convergence(convergence(run), problem_dir / PLOT)
        readme = problem_dir / README
        replace_between_markers(readme, problem_section(run, has_plot), title=f"# {run.problem}")
    parent = problem_dir.resolve().parent
    if index and index_dir is None and (parent == ARTIFACTS_DIR.resolve() or _has_markers(parent / README)):
        index_dir = parent
    if index and index_dir is not None:
        write_index(index_dir)
    return readme


def problem_section(run: Run, has_plot: bool) -> str:
    out = ["## Beam search results", "",
           f"_Generated by `python -m beamsearch.report` from this folder's summary.json and "
           f"{TRACE_ARCHIVE if run.archived else TRACE_DIR + '/'}; "
           "text between the markers is rewritten on every run._", ""]  # fmt: skip
    out += [f"- {n}" for n in run.notes] + ([""] if run.notes else [])
    if run.summary or run.state:
        out += [_safe(header_text, run), ""]
    out += ["### Running best per round", ""]
    if has_plot:
        out += [f"![running best per round]({PLOT})", ""]
    out += [_safe(rounds_table, run), ""]
    if run.summary and run.summary.models:
        out += ["### Models", "", _safe(models_text, run), ""]
    out += ["### Best round", "", _safe(best_round_text, run), "",
            "### Nsight Compute: input -> optimized", "", _safe(ncu_section, run)]  # fmt: skip
    return "\n".join(out).rstrip() + "\n"


def _safe(section, run: Run) -> str:
    """A section, or why it could not be made: a report at the end of a search must not end the search."""
    try:
        return section(run)
    except Exception as e:  # any bug here is reported in the text and the log, not raised
        log.exception("report section %s failed for %s", section.__name__, run.folder)
        return f"(this section could not be made: {type(e).__name__}: {e})"


def header_text(run: Run) -> str:
    out = [md_table(TABLE_HEAD, [row_cells(run)]), "", environment_line(run) + ".", "", _config_line(run)]
    if run.summary:
        out = [result_text(run.summary), "", *out]
    if run.on_cpu:
        out += ["", "CPU run: kernels ran in Triton's interpreter, so these times say nothing about GPU speed "
                "(no floor; ratios against PyTorch not shown)."]  # fmt: skip
    return "\n".join(out)


def result_text(s: Summary) -> str:
    """The result first, as the console says it (``display.result_line``): its ratio to the best baseline and
    share of the floor, and a loss to the best baseline with its reason; then what the reader must not miss."""
    line = result_line(s).removeprefix("result: ")
    out = [f"**Result:** {line}."]
    return "\n".join(out + [f"\n**Warning:** {w}." for w in s.warnings])


def _config_line(run: Run) -> str:
    c = (run.summary or run.state).config
    stopped = f" Stopped: {run.summary.stop_reason}." if run.summary and run.summary.stop_reason else ""
    if run.summary and run.summary.search_s is not None:
        setup = f"setup {run.summary.setup_s / 60:.1f} min, " if run.summary.setup_s is not None else ""
        stopped += f" Time: {setup}search {run.summary.search_s / 60:.1f} min, {run.summary.wall_s / 60:.1f} min in all."
    if c.proposing:
        names = ", ".join(f"`{e.model}`" for e in c.models) if c.models else f"`{c.llm}`"
        proposer = (f"LLMs {names}" if len(c.models) > 1 else f"LLM {names}") if c.llm else f"replay of `{c.replay}`"
        proposer += f", {c.samples} replies a prompt" if c.samples > 1 else ""
        return (f"Search: {proposer}, beam width {c.beam_width}, {c.directions} directions per parent, "
                f"{c.rounds} rounds planned, seed {c.seed}.{stopped}")  # fmt: skip
    per_round = f"{c.candidates_per_round} candidates" if c.candidates_per_round else f"{PER_WORKER} candidates per worker"
    if c.sweep:
        return f"Sweep: every point of the starting kernel's knob space, {per_round} a round.{stopped}"
    return (f"Search: offline optimiser, beam width {c.beam_width}, {per_round} a round, {c.rounds} rounds planned, "
            f"seed {c.seed}.{stopped}")  # fmt: skip


def models_text(run: Run) -> str:
    """A run of several models: what each one's tasks came to, and its share at the end (docs/models.md)."""
    assert run.summary is not None
    c = run.summary.config
    samples = f" {c.samples} replies a prompt." if c.samples > 1 else ""
    return md_table(MODEL_COLUMNS, model_rows(run.summary.models)) + f"\n\nShares at the end of the run.{samples}"


def rounds_table(run: Run) -> str:
    head = ("round", "candidates", "ok", "failed", "round's best", "round's best ms", "running best ms",
            "vs input", "beam after", "wall s", "tokens", "cost $")  # fmt: skip
    rows, start = [], run.start_ms
    if start is not None:
        rows.append(["0 (input)", "1", "1", "0", "`input`", fmt_ms(start), fmt_ms(start), "1.00x",
                     "`input`", "-", "-", "-"])  # fmt: skip
    for r, running in zip(run.rounds, running_best(run), strict=True):
        note = "" if r.ok else " (none passed)"
        failed = f"{r.failed}; {r.inconclusive} inconclusive" if r.inconclusive else str(r.failed)
        rows.append([str(r.round), str(r.tasks), f"{r.ok}{note}", failed, f"`{r.best_id}`" if r.best_id else "-",
                     fmt_ms(r.best_ms), fmt_ms(running), fmt_x(ratio(start, running)),
                     ", ".join(f"`{b}`" for b in r.beam) or "-", f"{r.wall_s:.0f}", str(r.tokens), f"{r.cost_usd:.2f}"])  # fmt: skip
    if not rows:
        return "No round recorded yet."
    text = md_table(head, rows) + ("\n\nTimes as measured during each round; the best ms above is from the "
                                   "side-by-side re-timing at the end.")
    if any(r.inconclusive for r in run.rounds):
        text += (" An inconclusive candidate's timing failed, alone too, only checks that other processes on the GPU "
                 "can fail: it is not ranked, and not counted as failed.")  # fmt: skip
    return text


def running_best(run: Run) -> list[float | None]:
    """Per round: the recorded running best, else carried over from earlier rounds and the input."""
    out, best = [], run.start_ms
    for r in run.rounds:
        candidates = [v for v in (best, r.best_ms) if v is not None]
        best = r.running_best_ms if r.running_best_ms is not None else min(candidates, default=None)
        out.append(best)
    return out


def best_round_text(run: Run) -> str:
    best_id, best_ms, best_round = run.best
    if best_id is None:
        return "No kernel was timed: there is no best yet."
    if best_round in (0, None) or best_id == "input":
        lines = [f"No candidate beat the starting kernel ({fmt_ms(best_ms)} ms) in the final re-timing."]
        fastest = fastest_candidate(run)
        if fastest is not None:
            lines[0] += (f" The fastest candidate of the rounds was `{fastest.best_id}` (round {fastest.round}, "
                         f"{fmt_ms(fastest.best_ms)} ms as measured then).")  # fmt: skip
    else:
        vs_input = run.summary.speedup_vs_input if run.summary else ratio(run.input_ms, best_ms)
        lines = [f"Round {best_round}: `{best_id}` at {fmt_ms(best_ms)} ms, {fmt_x(vs_input)} faster than the input kernel."]
        result = _best_result(run)
        if result is not None and result.kernel is not None and result.kernel.note:
            lines.append(f"Its change: {' '.join(result.kernel.note.split())}")
        folder = _candidate_dir(run, best_id)
        round_dir = f"{TRACE_DIR}/round_{best_round}/"
        links = [f"`{round_dir}` in [{TRACE_ARCHIVE}]({TRACE_ARCHIVE})" if run.archived else f"[{round_dir}]({round_dir})"]
        if folder is not None and folder.name == best_id and not run.archived:
            links.append(f"[its candidate folder]({folder.relative_to(run.folder).as_posix()}/)")
        if (run.folder / BEST_KERNEL_FILE).is_file():
            links.append(f"[{BEST_KERNEL_FILE}]({BEST_KERNEL_FILE})")
        lines.append("Files: " + ", ".join(links) + ".")
    if run.summary and run.summary.final_retime:
        lines += ["", "The beam and the input re-timed side by side at the end (the best is chosen here, among "
                  "re-timings that passed; one that failed a check was timed again alone):", "",
                  md_table(("kernel", "median ms", "passes ms", "status", "first re-timing failed"),
                           [[f"`{t.id}`", fmt_ms(t.median_ms), _passes(t), t.outcome, t.retried_alone_after or "-"]
                            for t in run.summary.final_retime])]  # fmt: skip
        notes = [t.note for t in run.summary.final_retime if t.note]
        lines += ["", *[f"- {note}" for note in notes]] if notes else []
    return "\n".join(lines)


def _passes(t: FinalTiming) -> str:
    """Each passing re-timing's median, and by how much they disagree where that is more than noise."""
    each = " / ".join(fmt_ms(m) for m in t.medians_ms) or "-"
    return each + (f" (disagree by {100 * t.spread:.0f} %)" if t.disagree and t.spread is not None else "")


def _candidate_dir(run: Run, cand_id: str) -> Path | None:
    """The candidate's own folder; in published results (no candidates/), the folder of the round it won."""
    trace = run.trace
    if cand_id == "input":
        return trace / "input" if (trace / "input").is_dir() else None
    found = next(iter(sorted(trace.glob(f"round_*/candidates/{cand_id}"))), None)
    won = next((r.round for r in run.rounds if r.best_id == cand_id), None)
    return found or (trace / f"round_{won}" if won is not None and (trace / f"round_{won}").is_dir() else None)


def _best_result(run: Run) -> TaskResult | None:
    folder = _candidate_dir(run, run.best[0] or "")
    if folder is None or not (folder / RESULT_FILE).is_file():
        return None
    return _load(TaskResult, folder / RESULT_FILE, [])


# ----------------------------------------------------------------------------------------- ncu metrics


def load_ncu(path: Path) -> tuple[dict[str, float] | None, str]:
    """The combined metrics of a profile file, or None and why not."""
    if not path.is_file():
        return None, "no profile recorded"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return None, f"unreadable profile: {e}"
    if not isinstance(data, dict) or data.get("available") is False:
        return None, f"profile unavailable: {data.get('reason', '') if isinstance(data, dict) else 'not an object'}"
    combined = (data.get("metadata") or {}).get("combined") or {}
    kernels = data.get("metrics") or {}
    if not combined and len(kernels) == 1:
        combined = next(iter(kernels.values()))
    values = {k: v for k, v in combined.items() if isinstance(v, (int, float))}
    return (values, "") if values else (None, "profile without metrics")


def fastest_candidate(run: Run) -> RoundRecord | None:
    """The round whose own best was the fastest new candidate of the run (as measured in its round)."""
    return min((r for r in run.rounds if r.best_id and r.best_ms), key=lambda r: r.best_ms, default=None)


def ncu_section(run: Run) -> str:
    """Input -> best candidate; when the input stayed the best, input -> the rounds' fastest candidate."""
    best_id, label = run.best[0], "optimized"
    if best_id == "input":
        fastest = fastest_candidate(run)
        best_id, label = (fastest.best_id, "fastest candidate") if fastest else (None, "optimized")
    input_dir = _candidate_dir(run, "input")
    before, why_before = load_ncu(input_dir / NCU_FILE) if input_dir else (None, "no profile recorded")
    best_dir = _candidate_dir(run, best_id) if best_id else None
    after, why_after = load_ncu(best_dir / NCU_FILE) if best_dir else (None, "no candidate was timed")
    if before is None and after is None:
        if run.on_cpu:
            return "No profiles: Nsight Compute needs a GPU (this was a CPU run)."
        return f"No profiles: input: {why_before}; {label}: {why_after}."
    head = ("metric", "input", f"{label} (`{best_id}`)", "change")
    rows = []
    for key in KEY_METRICS:
        a, b = (before or {}).get(key), (after or {}).get(key)
        if a is None and b is None:
            continue
        unit = m.BY_KEY[key].unit if key in m.BY_KEY else ""
        rows.append([m.BY_KEY[key].label if key in m.BY_KEY else key, fmt_metric(a, unit), fmt_metric(b, unit),
                     _change(a, b, unit)])  # fmt: skip
    notes = [f"{which}: {why}" for which, why in (("input", why_before), (label, why_after)) if why]
    tail = f"\n\nMissing: {'; '.join(notes)}." if notes else ""
    return md_table(head, rows) + tail


def fmt_metric(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ns":
        return f"{v / 1e6:.3f} ms" if v >= 1e6 else f"{v / 1e3:.1f} us"
    if unit == "%":
        return f"{v:.1f} %"
    if unit == "byte/second":
        return f"{v / 1e9:.0f} GB/s"
    if unit == "byte":
        return f"{v / 1e6:.1f} MB"
    if unit == "byte/block":
        return f"{v / 1024:.1f} KiB"
    return f"{v:.4g}"


def _change(a: float | None, b: float | None, unit: str) -> str:
    if a is None or b is None:
        return "-"
    if unit == "%":
        return f"{b - a:+.1f} pt"
    return f"{b / a:.2f}x" if a else "-"


# ----------------------------------------------------------------------------------------- plot


def convergence(run: Run) -> Convergence:
    """The plot's numbers: round times as measured in each round; PyTorch references only on a GPU."""
    start = run.start_ms
    xs = ([0] if start is not None else []) + [r.round for r in run.rounds]
    ys = ([start] if start is not None else []) + running_best(run)
    best_id, best_ms, _ = run.best
    refs = [("torch.compile", run.baseline_ms("compile")), ("PyTorch eager", run.baseline_ms("eager")),
            ("torch.compile max-autotune", run.baseline_ms("compile-max-autotune")),
            ("floor (physical limit)", run.floor_ms)]  # fmt: skip
    spec = (run.summary or run.state).spec if (run.summary or run.state) else None
    title = [run.problem, f"{_device(run)}, {spec.dtype}, {spec.shapes} shapes" if spec else ""]
    if run.on_cpu:
        title[1] += ": interpreter times, not GPU speed; PyTorch baselines not drawn"
    if run.summary and run.summary.speedup_vs_input:
        title.append(f"best {fmt_ms(best_ms)} ms")
        if run.summary.speedup_vs_best_baseline and not run.on_cpu:
            title[-1] += f", {fmt_x(run.summary.speedup_vs_best_baseline)} vs {run.summary.best_baseline} (the best baseline)"
        elif run.summary.speedup_vs_compile and not run.on_cpu:
            title[-1] += f", {fmt_x(run.summary.speedup_vs_compile)} vs torch.compile"
        title[-1] += f", {fmt_x(run.summary.speedup_vs_input)} vs the input kernel"
    return Convergence(
        title="\n".join(t for t in title if t),
        running=[(x, y) for x, y in zip(xs, ys, strict=True) if y is not None],
        round_best=[(r.round, r.best_ms) for r in run.rounds if r.best_ms is not None],
        failed_rounds=[r.round for r in run.rounds if not r.ok],
        final=(xs[-1], best_ms, best_id) if run.summary and best_ms is not None and xs else None,
        references=[] if run.on_cpu else [(label, ms) for label, ms in refs if ms],
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- the index


def write_index(index_dir: Path) -> Path:
    """Regenerate the results table between the markers of ``index_dir/README.md``."""
    index_dir = Path(index_dir)
    folders = sorted(index_dir.iterdir()) if index_dir.is_dir() else []
    runs = [load_run(p) for p in folders if (p / SUMMARY_FILE).is_file()]
    out = ["## Beam search results", "",
           "_Generated by `python -m beamsearch.report` from each problem's summary.json; text between the "
           "markers is rewritten on every run, the rest of this file is kept._", ""]  # fmt: skip
    if not runs:
        out.append("No search has finished yet: no problem folder has a summary.json.")
    else:
        out += [md_table(TABLE_HEAD, [row_cells(r, link=True) for r in runs]), ""]
        envs: dict[str, list[str]] = {}
        for r in runs:
            short = r.problem.split("_")[0] if r.problem.split("_")[0].isdigit() else r.problem
            envs.setdefault(environment_line(r) or "unknown environment", []).append(f"`{short}`")
        out += ["Environment:", ""] + [f"- {', '.join(names)}: {env}" for env, names in envs.items()] + [""]
        out.append("Best ms: the beam and the input kernel re-timed side by side at the end of the search; ratios "
                   "are baseline time / best time (> 1: faster); % of floor: the physical floor / best time. Ratios "
                   "against PyTorch and floors are shown for GPU runs only.")  # fmt: skip
        for r in runs:
            out += [f"- `{r.problem}`: {n}" for n in r.notes]
    readme = index_dir / README
    replace_between_markers(readme, "\n".join(out).rstrip() + "\n", title="# Problems and results")
    return readme


# ----------------------------------------------------------------------------------------- markers


def replace_between_markers(path: Path, body: str, title: str) -> None:
    """Put ``body`` between the markers of ``path``; insert the markers before the first '## ' section
    (after the title and intro) when absent; create the file with ``title`` when missing."""
    block = f"{START}\n{body.rstrip()}\n{END}"
    text = path.read_text() if path.is_file() else f"{title}\n"
    start, end = text.find(START), text.find(END)
    if start != -1 and end > start:
        text = text[:start] + block + text[end + len(END):]
    else:
        lines = text.splitlines(keepends=True)
        at = next((i for i, line in enumerate(lines) if i > 0 and line.startswith("## ")), len(lines))
        head = "".join(lines[:at]).rstrip("\n")
        rest = "".join(lines[at:])
        text = f"{head}\n\n{block}\n" + (f"\n{rest}" if rest else "")
    write_atomic(path, text)


def _has_markers(path: Path) -> bool:
    try:
        return START in path.read_text()
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m beamsearch.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("folders", nargs="+", help="problem folders (or bundled problem names) holding a run")
    parser.add_argument("--index", type=Path, default=None, help="folder whose README.md gets the table "
                        "(default: the parent when it is artifacts/ or its README.md has the markers)")  # fmt: skip
    parser.add_argument("--no-index", action="store_true", help="write only the problems' READMEs")
    args = parser.parse_args(argv)
    folders = [_folder(name) for name in args.folders]  # every name checked before any is written
    for folder in folders:
        try:
            print(write_report(folder, args.index, index=not args.no_index))
        except OSError as e:  # TraceWriteError: a file that cannot be written; the run's own files are untouched
            fail(f"no report for {folder}: {e}", code=EXIT_FAILED)
    return EXIT_PASSED


def _folder(name: str) -> Path:
    """A problem folder as given, or a bundled problem's; a name that is neither is a usage error."""
    folder = Path(name)
    if folder.is_dir():
        return folder
    try:
        return Path(resolve_problem(name).problem_path).parent
    except ProblemNotFound as e:
        fail(str(e))


if __name__ == "__main__":
    raise SystemExit(main())
