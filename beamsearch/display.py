"""What the user sees while a search runs: a live rich panel, or JSON lines (``--quiet``) for logs.

Every event also goes to ``events.jsonl`` in the output folder, whichever mode is on.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

from beamsearch.records.state import RoundRecord, Summary, TaskResult

# what a status means where its name alone may mislead
_WHY = {"inconclusive": " (disturbed by other processes on the GPU)"}


class Display:
    def __init__(self, quiet: bool, log: Callable[[dict], None], console: Console | None = None) -> None:
        self.quiet = quiet
        self.log = log
        self.console = console or Console(stderr=True)
        self.round = 0
        self.tasks = 0
        self.done = 0
        self.not_ok: Counter[str] = Counter()  # this round's candidates by status, other than ok
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
        elif kind in ("start", "verify_slots", "baseline", "retime", "retime_note", "interrupted", "resume", "worker_lost",
                      "task_timeout", "model_lost", "not_tried", "compiler_seed"):
            self.console.print(f"[bold]{kind}[/]: " + ", ".join(f"{k}={_short(v)}" for k, v in data.items()))
        self._refresh()

    def round_start(self, round_: int, tasks: int, reused: int) -> None:
        self.round, self.tasks, self.done, self.not_ok = round_, tasks, reused, Counter()
        self.event("round_start", round=round_, tasks=tasks, reused=reused)

    def candidate(self, r: TaskResult, more_tasks: int = 0) -> None:
        """``more_tasks``: kernels ``r``'s reply handed back that the round tries besides (``Handback``)."""
        self.done += 1
        self.tasks += more_tasks
        if r.status != "ok":
            self.not_ok[r.status] += 1
        self.tokens += r.tokens
        self.cost_usd += r.cost_usd
        self.event("candidate", id=r.task_id, parent=r.parent_id, status=r.status, reason=r.reason[:400],
                   median_ms=r.ranked_ms, worker=r.worker, tokens=r.tokens, cost_usd=r.cost_usd,
                   stage_s={k: round(v, 2) for k, v in r.stage_s.items()}, from_task=r.from_task,
                   reply_notes=r.reply_notes)  # fmt: skip
        if not self.quiet:  # above the live panel in a terminal (rich keeps the panel at the bottom)
            ms = f"{r.ranked_ms:.4f} ms" if r.ranked_ms else "-"
            came = f"(from {r.from_task}'s reply) " if r.from_task else ""
            self.console.print(f"  {r.task_id:<10} {r.status:<11} {ms:>12}  {came}{r.reason[:240]}", markup=False,
                               highlight=False)  # fmt: skip
            for note in r.reply_notes:
                self.console.print(f"  {'':<34}reply: {note[:240]}", markup=False, highlight=False)

    def round_end(self, record: RoundRecord, speedup: float | None) -> None:
        self.best_ms, self.speedup = record.running_best_ms, speedup
        self.event("round_end", **record.model_dump(), speedup_vs_input=speedup)
        if not self.quiet:
            best = f"{record.running_best_ms:.4f} ms" if record.running_best_ms else "-"
            x = f" ({speedup:.2f}x the input)" if speedup else ""
            not_ok = ", ".join(f"{n} {status}{_WHY.get(status, '')}" for status, n in sorted(self.not_ok.items()))
            spent = f", {record.tokens} tokens (${record.cost_usd:.4f})" if record.tokens else ""
            self.console.print(f"[bold]round {record.round}[/]: {record.ok}/{record.tasks} ok (not ok: {not_ok or 'none'}), "
                               f"best so far {best}{x}, {record.wall_s:.0f} s{spent}")  # fmt: skip

    def finish(self, summary: Summary) -> None:
        self.event("finish", best_id=summary.best_id, best_ms=summary.best_ms, speedup_vs_input=summary.speedup_vs_input,
                   best_baseline=summary.best_baseline, speedup_vs_best_baseline=summary.speedup_vs_best_baseline,
                   speedup_vs_eager=summary.speedup_vs_eager, speedup_vs_compile=summary.speedup_vs_compile,
                   pct_of_floor=summary.pct_of_floor, wall_s=summary.wall_s)  # fmt: skip
        self.close()
        if not self.quiet:
            self.console.print(_summary_table(summary))

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
        table.add_row(str(self.round), str(running), str(self.done), str(sum(self.not_ok.values())),
                      f"{self.best_ms:.4f}" if self.best_ms else "-", f"{self.speedup:.2f}x" if self.speedup else "-",
                      str(self.tokens), f"{time.time() - self.started:.0f} s")  # fmt: skip
        return table


def _summary_table(s: Summary) -> Table:
    bar = f", {s.speedup_vs_best_baseline:.2f}x the best PyTorch baseline ({s.best_baseline})" \
        if s.speedup_vs_best_baseline else ""  # fmt: skip
    table = Table(title=f"{s.problem}: best {s.best_id} after {len(s.rounds)} rounds{bar}")
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
        table.caption = "CPU run: kernels ran in Triton's interpreter, so only the ratio to the input kernel means anything"
    elif s.pct_of_floor is not None and s.floor:
        table.caption = f"{s.pct_of_floor:.0f} % of the floor ({s.floor.floor_ms:.4f} ms)"
    return table


def _short(v: object) -> str:
    text = f"{v:.4f}" if isinstance(v, float) else str(v)
    return text if len(text) < 120 else text[:117] + "..."
