"""The trace folder: only the driver writes it, every file atomically (a temporary file, then a rename).

    <out>/state.json                              BeamState after the last finished round (resume point)
    <out>/events.jsonl                            one line per event (task done, round done, errors)
    <out>/optimization_trace/input/               the starting kernel, measured like a candidate
    <out>/optimization_trace/round_N/             the round's best new candidate, in the published layout:
        input_ncu_metrics.json  bottleneck_prompt.txt  bottleneck_response.txt  strategy.json
        opt_prompt.txt  opt_reply.txt  reflexion.txt  optimized_ncu_metrics.json  kernel.py
        benchmark_results.json  round.json (RoundRecord)
        plan.json                                 the round's tasks as planned, before the first ran (RoundPlan)
        refine_<n>_prompt.txt refine_<n>_reply.txt  each refinement request after a failed verification
        llm_calls.txt                             one line per model request: status, time, tokens, cost, why unused
    <out>/optimization_trace/round_N/candidates/<id>/   the same for every candidate, plus result.json
                                                  (the whole TaskResult) and verification.json
    <out>/optimized_kernel_beam_search.py, <out>/summary.json   at the end

A file that cannot be written (a full disk) raises TraceWriteError; the previous version stays intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from beamsearch.records.llm import Exchange
from beamsearch.records.schema import Profile
from beamsearch.records.state import BeamState, RoundPlan, RoundRecord, Summary, TaskResult
from beamsearch.records.trace_archive import TRACE_DIR

STATE_FILE = "state.json"
SUMMARY_FILE = "summary.json"
BEST_KERNEL_FILE = "optimized_kernel_beam_search.py"
RESULT_FILE = "result.json"
PLAN_FILE = "plan.json"


class TraceWriteError(OSError):
    pass


def write_atomic(path: Path, text: str) -> None:
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise TraceWriteError(e.errno, f"could not write {path}: {e.strerror or e}") from e


class TraceWriter:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.trace = out / TRACE_DIR

    def round_dir(self, round_: int) -> Path:
        return self.trace / f"round_{round_}"

    def candidate_dir(self, result: TaskResult) -> Path:
        if result.round == 0:
            return self.start_dir(result.task_id)
        return self.round_dir(result.round) / "candidates" / result.task_id

    def start_dir(self, task_id: str) -> Path:
        """Round 0's folder for ``task_id``: the input, and the compiler seed beside it."""
        return self.trace / task_id

    def write_candidate(self, result: TaskResult, problem: str) -> Path:
        folder = self.candidate_dir(result)
        # result.json last: its presence marks a complete candidate folder (resume reads it).
        for name, text in published_files(result, problem).items():
            write_atomic(folder / name, text)
        write_atomic(folder / RESULT_FILE, result.model_dump_json(indent=1))
        return folder

    def write_round(self, record: RoundRecord, best: TaskResult | None, problem: str) -> None:
        folder = self.round_dir(record.round)
        if best is not None:
            for name, text in published_files(best, problem).items():
                write_atomic(folder / name, text)
        write_atomic(folder / "round.json", record.model_dump_json(indent=1))

    def write_plan(self, plan: RoundPlan) -> None:
        write_atomic(self.round_dir(plan.round) / PLAN_FILE, plan.model_dump_json())

    def read_plan(self, round_: int) -> RoundPlan | None:
        """The round's plan, if it was planned (a run resumed mid-round); None before, or for a run saved
        before plans were written (its round is planned again, from the same saved state)."""
        path = self.round_dir(round_) / PLAN_FILE
        return RoundPlan.model_validate_json(path.read_text()) if path.is_file() else None

    def finished_candidates(self, round_: int) -> list[TaskResult]:
        """Candidates of a round whose folders are complete: what a resumed run does not redo."""
        found = []
        for path in sorted((self.round_dir(round_) / "candidates").glob(f"*/{RESULT_FILE}")):
            try:
                found.append(TaskResult.model_validate_json(path.read_text()))
            except ValueError:
                continue  # a folder from a write that died half-way is redone
        return found

    def save_state(self, state: BeamState) -> None:
        write_atomic(self.out / STATE_FILE, state.model_dump_json(indent=1))

    def remove_partial_writes(self) -> list[Path]:
        """Remove the temporary files a driver killed mid-write left (``write_atomic``'s ``.<name>.*.tmp``):
        nothing reads them, and the file each was to replace is intact. For a resume: only one driver
        writes a trace, so none of them is still being written."""
        partial = [p for p in self.out.rglob(".*.tmp") if p.is_file()]
        for path in partial:
            path.unlink(missing_ok=True)
        return partial

    def load_state(self) -> BeamState | None:
        path = self.out / STATE_FILE
        return BeamState.model_validate_json(path.read_text()) if path.is_file() else None

    def write_final(self, summary: Summary, best_source: str | None) -> None:
        if best_source is not None:
            write_atomic(self.out / BEST_KERNEL_FILE, best_source)
        write_atomic(self.out / SUMMARY_FILE, summary.model_dump_json(indent=1))

    def log_event(self, event: dict) -> None:
        """Append one JSON line; losing a log line to a full disk must not stop the run."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            with open(self.out / "events.jsonl", "a") as f:
                f.write(json.dumps(event) + "\n")
        except OSError:
            pass


def published_files(result: TaskResult, problem: str) -> dict[str, str]:
    """The published per-round file set for one candidate, as file name -> text."""
    files: dict[str, str] = {}
    if result.parent_profile is not None:
        files["input_ncu_metrics.json"] = ncu_json(result.parent_profile)
    # the diagnosis's own exchanges, or those of the task that diagnosed the parent for the run
    diagnose = [e for e in result.exchanges + result.shared_diagnosis if e.purpose in ("diagnose", "repair")]
    if diagnose:
        files["bottleneck_prompt.txt"] = diagnose[-1].prompt
        files["bottleneck_response.txt"] = _reply_text(diagnose[-1])
    if result.diagnosis is not None:
        chosen = _rotated(result.diagnosis.bottlenecks, result.direction)
        files["strategy.json"] = json.dumps([b.model_dump() for b in chosen], indent=2)
        if not diagnose:
            made = "made by an earlier task" if result.diagnosis.source == "llm" else "no model"
            files["bottleneck_response.txt"] = f"({made}: diagnosis from the {result.diagnosis.source})\n" + files["strategy.json"]
    optimize = [e for e in result.exchanges if e.purpose == "optimize"]
    if optimize:  # the rewrite's own exchange; each refinement has files of its own
        files["opt_prompt.txt"] = optimize[-1].prompt
        files["opt_reply.txt"] = _reply_text(optimize[-1])
    elif result.from_task:  # a kernel another task's reply held: that task's folder has the exchange
        note = result.kernel.note if result.kernel else ""
        files["opt_reply.txt"] = f"(a kernel of {result.from_task}'s reply: see opt_reply.txt in its folder) {note}\n"  # fmt: skip
    elif result.kernel is not None:
        files["opt_reply.txt"] = f"({result.kernel.origin} proposal) {result.kernel.note}\n"
    for i, e in enumerate((e for e in result.exchanges if e.purpose == "refine"), 1):
        files[f"refine_{i}_prompt.txt"] = e.prompt
        files[f"refine_{i}_reply.txt"] = _reply_text(e)
    if result.exchanges or result.shared_diagnosis:
        shared = "".join(f"{_call_line(e).rstrip()}  (made by {result.diagnosis_by}, counted there)\n"
                         for e in result.shared_diagnosis)  # fmt: skip
        files["llm_calls.txt"] = shared + "".join(_call_line(e) for e in result.exchanges)
    if result.reflection is not None:
        files["reflexion.txt"] = result.reflection.model_dump_json(indent=2)
    elif result.lesson:
        files["reflexion.txt"] = result.lesson + "\n"
    if result.profile is not None:
        files["optimized_ncu_metrics.json"] = ncu_json(result.profile)
    if result.kernel is not None:
        files["kernel.py"] = result.kernel.source
    if result.tries:
        files["verification.json"] = json.dumps([t.verdict.model_dump(mode="json") for t in result.tries], indent=1)
    files["benchmark_results.json"] = json.dumps(benchmark_json(result, problem), indent=2)
    return files


def _reply_text(exchange: Exchange) -> str:
    """The model's reply; where there was none (timeout, HTTP error), what happened instead."""
    return exchange.call.text or f"({exchange.parse_error or 'no reply: ' + exchange.call.status})\n"


def _call_line(e: Exchange) -> str:
    """One line per request: what it was for, what came back, what it cost, and why it was not used."""
    c = e.call
    line = (f"{e.purpose:<9} {c.status:<12} {c.latency_s:6.1f} s  {c.attempts} attempt(s)  "
            f"{c.prompt_tokens}+{c.completion_tokens} tokens  ${c.cost_usd:.4f}")  # fmt: skip
    return line + (f"  not used: {e.parse_error}" if e.parse_error else "") + "\n"


def ncu_json(profile: Profile) -> str:
    if not profile.available:
        return json.dumps({"available": False, "reason": profile.reason}, indent=2)
    metrics = {k.name: k.metrics for k in profile.kernels}
    metadata = {"gpu": profile.gpu_name, "ncu_version": profile.ncu_version, "combined": profile.combined,
                "ignored_kernels": profile.ignored_kernels}  # fmt: skip
    return json.dumps({"metrics": metrics, "metadata": metadata}, indent=2)


def benchmark_json(result: TaskResult, problem: str) -> dict:
    timing = result.timing.timing if result.timing else None
    ms = result.ranked_ms
    return {
        "problem": problem,
        "id": result.task_id,
        "parent_id": result.parent_id,
        "status": result.status,
        "reason": result.reason,
        "time_ms": ms,
        "parent_ms": result.parent_ms,
        "speedup_vs_parent": (result.parent_ms / ms) if ms and result.parent_ms else None,
        "pct_of_floor": result.pct_of_floor,
        "method": timing.method if timing else None,
        "device": timing.device_name if timing else None,
        "dtype": timing.dtype if timing else None,
        "shapes": timing.shapes if timing else None,
        "n": timing.n if timing else None,
        "std_ms": timing.std_ms if timing else None,
        "screened_above_ms": timing.screened_above_ms if timing else None,
    }


def _rotated(items: list, k: int) -> list:
    if not items:
        return items
    k %= len(items)
    return items[k:] + items[:k]
