"""Where each candidate of a round spent its time, drawn on one clock: a row per candidate, a column per
``--step`` seconds, so waits that line candidates up one behind another can be seen.

    python scripts/candidate_timeline.py RUN_DIR [--round 1] [--step 0.5]

Reads the round's ``candidates/*/result.json``. Each row starts when the candidate's verification child
began work (``Verdict.started_at``) and marks, from its steps (``Verdict.steps_s``, ``TimingResult.steps_s``):

    a  loading the kernel and compiling it ahead (GPU)     s  waiting for a verification place (``gpu_slot``)
    u  waiting to share the GPU (``gpu_in_use``)
    c  the checks (compile, seeds, cache checks)           w  waiting for the measurement lock
    T  measuring, the GPU to itself                        k  checking the timed repetitions' outputs

and after each row the seconds its checks' steps waited for the GPU's use lock, between them
(``Verdict.use_wait_s``; verifications before it had one wait, ``u``). A last line counts, per column,
the candidates in their checks at once (``c``), and whether a timing was measuring (``T``). Far fewer
checks at once than verification places means they are waiting on each other.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from beamsearch.records.state import TaskResult

# Step names as the verification child writes them (workers.harness.verify_child), in order.
CHECKS_END = ("cache_checks", "seed2_checked", "seed1_checked", "seed0_checked", "kernel_imported")


def phases(result: TaskResult) -> list[tuple[str, float, float]]:
    """(mark, start, end) in epoch seconds, for the candidate's first verification and its timing."""
    if not result.tries:
        return []
    verdict = result.tries[0].verdict
    steps, t0 = verdict.steps_s, verdict.started_at
    if not t0:
        return []
    slot = steps.get("slot_taken", 0.0)
    use = steps.get("in_use", slot)
    checks = next((steps[k] for k in CHECKS_END if k in steps), use)
    ahead = steps.get("compiled_ahead", 0.0)  # before the place (workers.harness.compile_ahead)
    out = [("a", t0, t0 + ahead), ("s", t0 + ahead, t0 + slot), ("u", t0 + slot, t0 + use), ("c", t0 + use, t0 + checks)]
    timing = verdict.timing
    if timing is not None and timing.steps_s:
        ts = timing.steps_s
        start = t0 + checks
        hashed = ts.get("hashed", ts.get("inputs", 0.0))
        locked, measured = ts.get("locked", hashed), ts.get("measured", ts.get("locked", hashed))
        out += [("c", start, start + hashed), ("w", start + hashed, start + locked), ("T", start + locked, start + measured),
                ("k", start + measured, start + ts.get("checked", measured))]  # fmt: skip
    return [(m, a, b) for m, a, b in out if b > a]


def _use_wait_s(result: TaskResult) -> float:
    return result.tries[0].verdict.use_wait_s if result.tries else 0.0


def draw(results: list[TaskResult], step_s: float) -> list[str]:
    rows = [(r.task_id, r.worker.rsplit("/", 1)[-1], phases(r), _use_wait_s(r)) for r in results]
    rows = [row for row in rows if row[2]]
    if not rows:
        return ["no candidate of this round has a verification with its steps"]
    t0 = min(p[1] for _, _, ps, _ in rows for p in ps)

    def cell(t: float) -> float:
        return (t - t0) / step_s

    width = max(1, math.ceil(cell(max(p[2] for _, _, ps, _ in rows for p in ps)) - 1e-9))
    lines, checking, measuring = [], [0] * width, [False] * width
    for task_id, worker, ps, waited in sorted(rows, key=lambda row: (row[2][0][1], row[0])):
        cells = [" "] * width
        for mark, a, b in ps:  # a phase fills the columns [a, b) it touches, at least one
            first = int(cell(a))
            for i in range(first, min(width, max(first + 1, math.ceil(cell(b) - 1e-9)))):
                cells[i] = mark
                checking[i] += mark == "c"
                measuring[i] = measuring[i] or mark == "T"
        lines.append(f"{task_id:>12} {worker[-10:]:>10} |{''.join(cells)}| {waited:.1f} s")
    lines.append(f"{'checks at once':>23} |{''.join(str(min(n, 9)) if n else ' ' for n in checking)}|")
    lines.append(f"{'measuring':>23} |{''.join('T' if m else ' ' for m in measuring)}|")
    busy = sum(n > 0 for n in checking)
    lines.append(f"{width * step_s:.1f} s drawn; some check running {100 * busy / width:.0f} % of it, a timing measuring "
                 f"{100 * sum(measuring) / width:.0f} %; mean checks at once while any ran "
                 f"{sum(checking) / max(1, busy):.2f}")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--step", type=float, default=0.5, help="seconds a column")
    args = parser.parse_args()
    paths = sorted(args.run.glob(f"optimization_trace/round_{args.round}/candidates/*/result.json"))
    results = [TaskResult.model_validate_json(p.read_text()) for p in paths]
    print("\n".join(draw(results, args.step)))


if __name__ == "__main__":
    main()
