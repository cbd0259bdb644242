"""What the user sees while a search runs: a live rich panel, or JSON lines (``--quiet``) for logs.

Every event also goes to ``events.jsonl`` in the output folder, whichever mode is on. The console says
each event as a sentence with its units (``event_line``) on stdout, warnings on stderr; where the output
is not a terminal (a log file, CI) lines are not wrapped.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

from beamsearch.records.llm import ModelStats
from beamsearch.records.state import FinalTiming, RoundRecord, Summary, TaskResult

# what a status means where its name alone may mislead
_WHY = {"inconclusive": " (disturbed by other processes on the GPU)"}
# events a person should not miss: on stderr, as "warning: ..."
WARNINGS = ("worker_lost", "task_timeout", "model_lost", "model_out", "no_candidate")
# the widest a table gets where the output is not a terminal (rich would take 80 columns there)
LOG_WIDTH = 160


def console_for(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): a terminal's width in a terminal; elsewhere no wrapping of lines."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, soft_wrap=True, width=LOG_WIDTH)


class Display:
    def __init__(self, quiet: bool, log: Callable[[dict], None], console: Console | None = None,
                 warnings: Console | None = None) -> None:  # fmt: skip
        """``console``: where the run is told (default stdout); ``warnings``: where what goes wrong is (default
        stderr; ``console`` when only that is given, as tests do)."""
        self.quiet = quiet
        self.log = log
        self.console = console or console_for()
        self.warnings = warnings or (console if console is not None else console_for(stderr=True))
        self.round = 0
        self.tasks = 0
        self.done = 0
        # candidates by round and status, other than ok: rounds overlap, so each round keeps its own
        self.not_ok: dict[int, Counter[str]] = {}
        self.tokens = 0
        self.cost_usd = 0.0
        self.best_ms: float | None = None
        self.speedup: float | None = None
        self.started = time.time()
        self.live: Live | None = None
        if not quiet and self.console.is_terminal:
            self.live = Live(self._panel(), console=self.console, refresh_per_second=2, transient=False)
            self.live.start()

    def event(self, kind: str, **data: object) -> None:
        record = {"event": kind, "t": round(time.time(), 3), **data}
        self.log(record)
        if self.quiet:
            print(json.dumps(record, default=str), file=sys.stdout, flush=True)
        elif (line := event_line(kind, data)) is not None:
            self.say(line, warning=kind in WARNINGS)
        self._refresh()

    def say(self, line: str, warning: bool = False) -> None:
        """One line for a person (not in ``--quiet``, whose stdout is JSON lines): a warning on stderr."""
        if self.quiet:
            return
        if warning:
            self.warnings.print(f"warning: {line}", markup=False, highlight=False)
        else:
            self.console.print(line, markup=False, highlight=False)

    def round_start(self, round_: int, tasks: int, reused: int) -> None:
        """A round's tasks start going out; the panel counts the open rounds' tasks together."""
        self.round, self.tasks, self.done = round_, self.tasks + tasks, self.done + reused
        self.not_ok[round_] = Counter()
        self.event("round_start", round=round_, tasks=tasks, reused=reused)

    def candidate(self, r: TaskResult, more_tasks: int = 0) -> None:
        """``more_tasks``: kernels ``r``'s reply handed back that the round tries besides (``Handback``)."""
        self.done += 1
        self.tasks += more_tasks
        if r.status != "ok":
            self.not_ok.setdefault(r.round, Counter())[r.status] += 1
        self.tokens += r.tokens
        self.cost_usd += r.cost_usd
        self.event("candidate", id=r.task_id, parent=r.parent_id, status=r.status, reason=r.reason[:400],
                   median_ms=r.ranked_ms, worker=r.worker, tokens=r.tokens, cost_usd=r.cost_usd,
                   stage_s={k: round(v, 2) for k, v in r.stage_s.items()}, from_task=r.from_task,
                   reply_notes=r.reply_notes)  # fmt: skip
        if not self.quiet:  # above the live panel in a terminal (rich keeps the panel at the bottom)
            ms = f"{r.ranked_ms:.4f} ms" if r.ranked_ms else "-"
            came = f"(from {r.from_task}'s reply) " if r.from_task else ""
            reason = r.reason.removeprefix(ms).strip() if r.ranked_ms else r.reason  # an ok reason opens with the time
            self.console.print(f"  {r.task_id:<10} {r.status:<11} {ms:>12}  {came}{reason[:240]}".rstrip(),
                               markup=False, highlight=False)  # fmt: skip
            for note in r.reply_notes:
                self.console.print(f"  {'':<34}reply: {note[:240]}", markup=False, highlight=False)

    def round_end(self, record: RoundRecord, speedup: float | None) -> None:
        self.best_ms, self.speedup = record.running_best_ms, speedup
        self.event("round_end", **record.model_dump(), speedup_vs_input=speedup)
        if not self.quiet:
            best = f"{record.running_best_ms:.4f} ms" if record.running_best_ms else "-"
            x = f" ({speedup:.2f}x the input)" if speedup else ""
            counts = self.not_ok.pop(record.round, Counter())
            not_ok = ", ".join(f"{n} {status}{_WHY.get(status, '')}" for status, n in sorted(counts.items()))
            spent = f", {record.tokens} tokens (${record.cost_usd:.4f})" if record.tokens else ""
            self.console.print(f"[bold]round {record.round}[/]: {record.ok}/{record.tasks} ok (not ok: {not_ok or 'none'}), "
                               f"best so far {best}{x}, {record.wall_s:.0f} s{spent}")  # fmt: skip

    def finish(self, summary: Summary) -> None:
        self.event("finish", best_id=summary.best_id, best_ms=summary.best_ms, speedup_vs_input=summary.speedup_vs_input,
                   best_baseline=summary.best_baseline, speedup_vs_best_baseline=summary.speedup_vs_best_baseline,
                   speedup_vs_eager=summary.speedup_vs_eager, speedup_vs_compile=summary.speedup_vs_compile,
                   pct_of_floor=summary.pct_of_floor, wall_s=summary.wall_s,
                   slower_than_best_baseline=summary.slower_than_best_baseline, loss_reason=summary.loss_reason,
                   stop_reason=summary.stop_reason)  # fmt: skip
        self.close()
        if not self.quiet:
            self.say(table_title(summary))
            self.console.print(_summary_table(summary))
            if summary.models:
                self.say("per model:")
                self.console.print(_models_table(summary.models))
            self.say(result_line(summary))
            self.say(times_line(summary))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._panel())

    def _panel(self) -> Table:
        table = Table(title="beamsearch", show_header=True)
        for col in ("round", "running", "done", "not ok", "best ms", "speedup", "tokens", "elapsed"):
            table.add_column(col, justify="right")
        running = max(0, self.tasks - self.done)
        not_ok = sum(sum(c.values()) for c in self.not_ok.values())
        table.add_row(str(self.round), str(running), str(self.done), str(not_ok),
                      f"{self.best_ms:.4f}" if self.best_ms else "-", f"{self.speedup:.2f}x" if self.speedup else "-",
                      str(self.tokens), f"{time.time() - self.started:.0f} s")  # fmt: skip
        return table


def _summary_table(s: Summary) -> Table:
    """The baselines, the input and the best kernel. No title: rich wraps one to the table's width (say it in a
    line of its own: ``table_title``)."""
    table = Table()
    table.add_column("")
    table.add_column("median ms", justify="right")
    table.add_column("best is", justify="right")
    on_gpu = s.spec.device.startswith("cuda")
    rows = [(b.label, b.median_ms) for b in s.baselines] + [("input kernel", s.input_ms), ("best kernel", s.best_ms)]
    for label, ms in rows:
        # Interpreter times mean nothing next to PyTorch's native CPU times: no ratio for those on the CPU.
        comparable = label == "input kernel" or on_gpu
        x = f"{ms / s.best_ms:.2f}x faster" if ms and s.best_ms and label != "best kernel" and comparable else ""
        table.add_row(label, f"{ms:.4f}" if ms else "-", x)
    if s.tokens:
        table.add_row("model use", f"{s.tokens} tokens", f"${s.cost_usd:.4f}")
    if not on_gpu:
        table.caption = "CPU: Triton interpreter times"  # short: a caption wraps to the table's width
    return table


MODEL_COLUMNS = ("model", "share", "tasks", "replies", "kernels", "verified", "entered beam", "failed", "best kernel",
                 "tokens", "cost $", "in rotation")  # fmt: skip


def model_rows(models: list[ModelStats]) -> list[list[str]]:
    """A run of several models, one row each (``MODEL_COLUMNS``): the console's final table and the report's."""
    return [[s.model, f"{100 * s.share:.0f} %", str(s.tasks), str(s.replies), str(s.kernels), str(s.verified),
             str(s.entered_beam), str(s.failed), f"{s.best_id} ({_ms(s.best_ms)})" if s.best_id else "-",
             str(s.tokens), f"{s.cost_usd:.4f}", _out(s.out_reason) if s.out_reason else "yes"]
            for s in models]  # fmt: skip


def _out(reason: str) -> str:
    """A model's reason for being out, short for a table cell (the whole is in the summary and the warning)."""
    return f"out: {reason[:44]}..." if len(reason) > 47 else f"out: {reason}"


def _models_table(models: list[ModelStats]) -> Table:
    table = Table()
    for i, col in enumerate(MODEL_COLUMNS):
        table.add_column(col, justify="left" if i in (0, 8, 11) else "right")
    for row in model_rows(models):
        table.add_row(*row)
    return table


def table_title(s: Summary) -> str:
    return f"{s.problem} after {len(s.rounds)} rounds, as re-timed at the end:"


def result_line(s: Summary) -> str:
    """The run's result in one sentence, led by its ratio to the best baseline and its share of the physical
    floor; a result slower than the best baseline says so, and why where the run knows."""
    if s.best_id is None or s.best_ms is None:
        return "result: none: no kernel passed the final re-timing"
    on_gpu = s.spec.device.startswith("cuda")
    head = f"result: {s.best_id} at {_ms(s.best_ms)}" + ("" if on_gpu else " in Triton's interpreter")
    bar = next((b for b in s.baselines if b.label == s.best_baseline), None)
    parts = []
    if s.speedup_vs_best_baseline and bar is not None and bar.median_ms:
        x, against = s.speedup_vs_best_baseline, f"the best baseline ({bar.label}, {_ms(bar.median_ms)})"
        parts.append(f"{x:.2f}x faster than {against}" if x >= 1 else f"SLOWER than {against}: {x:.2f}x its speed")
    if s.pct_of_floor is not None and s.floor is not None:
        parts.append(f"{s.pct_of_floor:.0f} % of the physical floor ({_ms(s.floor.floor_ms)}, {s.floor.bound}-bound)")
    if s.speedup_vs_input and s.input_ms:
        parts.append(f"{s.speedup_vs_input:.2f}x the input kernel ({_ms(s.input_ms)})")
    line = head + (": " + ", ".join(parts) if parts else "")
    wandered = [t for t in s.final_retime if t.id in (s.best_id, "input") and t.disagree and t.spread is not None]
    if wandered:  # the ratio stands on passes further apart than noise: say so beside it, not only above
        line += (f" (uncertain: the re-timing's passes of {' and '.join(t.id for t in wandered)} disagree by up to "
                 f"{100 * max(t.spread or 0.0 for t in wandered):.0f} %)")
    if s.slower_than_best_baseline and s.loss_reason:
        line += f". Why slower: {s.loss_reason}"
    if s.approximate_math:
        line += (". It computes with fast approximate transcendentals (the math knob): verified within the problem's "
                 "tolerance on fresh inputs, not equal to the precise functions' values")  # fmt: skip
    if not on_gpu:
        line += ". A CPU run: no GPU baseline or floor to compare with, only the input kernel"
    return line


def times_line(s: Summary) -> str:
    """Where the run's time went, and why it stopped."""
    setup = f"setup {s.setup_s / 60:.1f} min, " if s.setup_s is not None else ""
    search = f"search {s.search_s / 60:.1f} min, " if s.search_s is not None else ""
    return (f"{s.candidates} candidates ({s.candidates_ok} ok) in {len(s.rounds)} rounds; {setup}{search}"
            f"{s.wall_s / 60:.1f} min in all; stopped: {s.stop_reason or 'unknown'}")


def event_line(kind: str, data: dict) -> str | None:
    """An event as a sentence with its units; None for the events the console does not say (candidates and
    rounds have lines of their own, profiles are silent)."""
    say = _SAY.get(kind)
    return say(data) if say is not None else None


def retime_line(timings: list[dict]) -> str:
    """The final re-timing: each finalist's median over its passes; every pass where they disagree."""
    done = [FinalTiming.model_validate(t) for t in timings]
    if not done:
        return "re-timed side by side: nothing to re-time"
    passes = max(len(t.medians_ms) for t in done)
    parts = []
    for t in sorted(done, key=lambda t: (t.crowned_ms is None, t.crowned_ms or 0.0)):
        if t.crowned_ms is None:
            parts.append(f"{t.id} {t.outcome}")
            continue
        part = f"{t.id} {_ms(t.crowned_ms)}"
        if t.disagree and t.spread is not None:
            each = " / ".join(_num(m) for m in t.medians_ms)
            part += f" ({each} ms: passes disagree by {100 * t.spread:.0f} %)"
        parts.append(part)
    return f"re-timed side by side (median of {passes} interleaved passes): " + ", ".join(parts)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{_num(v)} ms"


def _num(v: float) -> str:
    """A time with four significant digits, trailing zeros kept (75.00, 115.6, 1285.3, 0.0555)."""
    return f"{v:.1f}" if v >= 100 else f"{v:.2f}" if v >= 10 else f"{v:.3f}" if v >= 1 else f"{v:.4g}"


def _places(workers: list[str]) -> str:
    """Workers by where they run: ``2 on vm node f822fd70`` (their pids left out)."""
    places = Counter(re.sub(r" pid \d+", "", w) for w in workers)
    return ", ".join(f"{n} on {place}" for place, n in places.items()) or "none"


def _start(d: dict) -> str:
    floor = f"physical floor {_ms(d.get('floor_ms'))}" if d.get("floor_ms") else d.get("floor_note") or "no floor"
    return f"start: {d.get('problem')} on {d.get('gpu')}; {floor}; workers: {_places(list(d.get('workers') or []))}"


def _baseline(d: dict) -> str:
    if d.get("median_ms") is not None:
        library = f" (a vendor library's: {', '.join(d['library_ops'])})" if d.get("library_ops") else ""
        return f"baseline {d.get('label')}: {_ms(d['median_ms'])}{library}"
    return f"baseline {d.get('label')}: not timed ({d.get('status')}: {d.get('reason')})"


def _seed(d: dict) -> str:
    status, reason, ms, seed = d.get("status"), d.get("reason"), d.get("median_ms"), d.get("seed")
    if status in ("compiling", "reading"):
        doing = "compiling the problem with torch.compile max-autotune (about a minute)" if status == "compiling" \
            else "reading Inductor's kernels from the recording"  # fmt: skip
        variants = d.get("variants") or []
        return f"compiler seed: {doing}" + (f", {len(variants)} variants" if len(variants) > 1 else "")
    name = f" {seed}" if seed and seed != "compiler-seed" else ""
    return f"compiler seed{name}: {status}" + (f" at {_ms(ms)}" if ms else "") + (f": {reason}" if reason else "")


def _setup(d: dict) -> str:
    minutes = d.get("budget_minutes")
    budget = f"the budget of {minutes:g} minutes counts the rounds from here" if minutes else "no minutes budget"
    measured = ", ".join(map(str, d.get("measured") or ["the starting kernel", "the baselines"]))
    return f"setup took {d.get('setup_s', 0):.0f} s ({measured}); {budget}"


def _worker_lost(d: dict) -> str:
    again = "retried on it" if d.get("retried") else "not retried: it failed"
    return f"worker {d.get('worker')} died running {d.get('task')} ({d.get('error')}); the task was {again}"


def _model_out(d: dict) -> str:
    left = ", ".join(map(str, d.get("left") or [])) or "none"
    return f"model {d.get('model')} taken out of rotation at {d.get('task')} ({d.get('reason')}); in rotation: {left}"


def _model_lost(d: dict) -> str:
    action = "stopping the run" if d.get("action") == "stop" else "going on with the offline optimiser"
    return f"the model stopped answering at {d.get('task')} ({d.get('reason')}): {action}"


_SAY: dict[str, Callable[[dict], str]] = {
    "start": _start,
    "baseline": _baseline,
    "compiler_seed": _seed,
    "setup": _setup,
    "verify_slots": lambda d: f"verifications at once per GPU: {d.get('verify_per_gpu')} (the starting kernel's "
    f"verification peaked at {d.get('verification_peak_gb')} GB of {d.get('gpu_memory_gb')} GB)",
    "resume": lambda d: f"resuming after round {d.get('after_round')} of {d.get('rounds')}",
    "interrupted": lambda d: f"interrupted after round {d.get('after_round')}",
    "worker_lost": _worker_lost,
    "task_timeout": lambda d: f"task {d.get('task')} not back after {d.get('timeout_s', 0):.0f} s: its worker "
    f"{d.get('worker')} was restarted",
    "model_lost": _model_lost,
    "model_out": _model_out,
    "not_tried": lambda d: f"not tried: {', '.join(map(str, d.get('kernels') or []))} ({d.get('reason')})",
    "stop": lambda d: f"stopped after round {d.get('after_round')}: {d.get('reason')}",
    "retime": lambda d: retime_line(list(d.get("timings") or [])),
    "retime_note": lambda d: f"re-timing: {d.get('note')}",
    "profile_best": lambda d: f"profiling the best kernel, {d.get('id')}, which no round profiled",
    "no_candidate": lambda d: str(d.get("warning")),
}
