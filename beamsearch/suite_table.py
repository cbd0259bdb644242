"""A suite's table: a row per problem from its search's ``summary.json``, the geometric means, Markdown.

A summary is read as plain JSON and every field is optional here, so a summary written by an older or
newer version still gives a row (a missing value is an empty cell, never a failed suite).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from beamsearch.outcome import ratio
from beamsearch.records.suite import BaselineRatio, GeoMean, SuiteRow, SuiteTable

HEADROOM_PCT = 80.0  # a best baseline below this share of the floor leaves room to beat it
SUMMARY_FILE = "summary.json"  # as beamsearch.trace writes it


def read_summary(folder: Path) -> dict[str, Any] | None:
    """The run folder's summary.json as a dict; None when there is none or it is not a JSON object."""
    try:
        data = json.loads((folder / SUMMARY_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def summary_fields(summary: dict[str, Any]) -> dict[str, Any]:
    """The row's measured fields from a summary: its best time, baselines, ratios and floor share."""
    best_ms = _number(summary.get("best_ms"))
    baselines = [b for b in summary.get("baselines") or [] if isinstance(b, dict) and b.get("label")]
    ratios = [BaselineRatio(label=str(b["label"]), ms=_number(b.get("median_ms")),
                            ratio=ratio(_number(b.get("median_ms")), best_ms)) for b in baselines]  # fmt: skip
    bar = summary.get("best_baseline")
    if "best_baseline" not in summary and _on_gpu(
        summary
    ):  # an older summary: the bar as the driver picks it
        fastest = min((r for r in ratios if r.ms is not None), key=lambda r: r.ms or 0.0, default=None)
        bar = fastest.label if fastest else None
    bar_ms = next((r.ms for r in ratios if r.label == bar), None)
    library = next((b.get("library_ops") for b in baselines if b["label"] == bar), None)
    floor = summary.get("floor")
    floor_ms = _number(floor.get("floor_ms")) if isinstance(floor, dict) else None
    candidates = summary.get("candidates")
    return {
        "gpu_name": str(summary.get("gpu_name") or ""),
        "best_ms": best_ms,
        "best_baseline": bar if isinstance(bar, str) else None,
        "best_baseline_ms": bar_ms,
        "best_baseline_library": [str(op) for op in library] if isinstance(library, list) else [],
        "speedup_vs_best_baseline": _number(summary.get("speedup_vs_best_baseline"))
        or ratio(bar_ms, best_ms),
        "baselines": ratios,
        "pct_of_floor": _number(summary.get("pct_of_floor")),
        "best_baseline_pct_of_floor": 100.0 * floor_ms / bar_ms if floor_ms and bar_ms else None,
        "speedup_vs_input": _number(summary.get("speedup_vs_input")),
        "candidates": candidates if isinstance(candidates, int) else None,
        "search_wall_s": _number(summary.get("wall_s")),
        "stop_reason": str(summary.get("stop_reason") or ""),
    }


def finished_row(problem: str, folder: Path, summary: dict[str, Any], **row: Any) -> SuiteRow:
    """A search that wrote its summary: ``ok`` with a best kernel, else ``no_result`` with the summary's why."""
    fields = summary_fields(summary)
    if fields["best_ms"] is not None:
        return SuiteRow(problem=problem, folder=str(folder), status="ok", **fields, **row)
    warnings = [str(w) for w in summary.get("warnings") or []]
    why = "; ".join(warnings) or fields["stop_reason"] or "the search found no kernel that passed"
    return SuiteRow(
        problem=problem, folder=str(folder), status="no_result", **fields, **(row | {"reason": why})
    )


def geomean(values: Iterable[float | None]) -> tuple[float | None, int]:
    """The geometric mean of the positive finite values, and how many there were (None of none)."""
    kept = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not kept:
        return None, 0
    return math.exp(sum(math.log(v) for v in kept) / len(kept)), len(kept)


def build_table(rows: list[SuiteRow], **facts: Any) -> SuiteTable:
    """The table: the rows as given, the geometric means over the finished ones, the suite's facts
    (``suite_wall_s``, ``places``, ``search_args``, ``started_at``)."""
    ok = [r for r in rows if r.status == "ok"]
    vs_bar, n_bar = geomean(r.speedup_vs_best_baseline for r in ok)
    room = [
        r
        for r in ok
        if r.best_baseline_pct_of_floor is not None and r.best_baseline_pct_of_floor < HEADROOM_PCT
    ]
    vs_room, n_room = geomean(r.speedup_vs_best_baseline for r in room)
    vs_input, n_input = geomean(r.speedup_vs_input for r in ok)
    return SuiteTable(
        rows=rows,
        vs_best_baseline=GeoMean(
            value=vs_bar, count=n_bar, over="the finished problems with a best baseline"
        ),
        vs_best_baseline_headroom=GeoMean(
            value=vs_room,
            count=n_room,
            over=f"the finished problems whose best baseline runs below {HEADROOM_PCT:g} % of the floor",
        ),  # fmt: skip
        vs_input=GeoMean(value=vs_input, count=n_input, over="the finished problems"),
        headroom_pct=HEADROOM_PCT,
        searches_wall_s=sum(r.search_wall_s or 0.0 for r in rows if r.status in ("ok", "no_result")),
        process_s=sum(r.process_s or 0.0 for r in rows),
        **facts,
    )


def markdown(table: SuiteTable) -> str:
    """The table as Markdown: a row per problem, then the geometric means and the wall times."""
    labels = sorted({b.label for r in table.rows for b in r.baselines}, key=_baseline_order)
    head = (["problem", "status", "best ms", "best baseline ms", "vs best"] + [f"vs {label}" for label in labels]
            + ["vs input"]
            + ["% of floor", "baseline % of floor", "candidates", "minutes", "place", "reason"])  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.rows:
        by_label = {b.label: b.ratio for b in r.baselines}
        library = f"; {', '.join(r.best_baseline_library)}" if r.best_baseline_library else ""
        bar = f"{_ms(r.best_baseline_ms)} ({r.best_baseline}{library})" if r.best_baseline else ""
        status = r.status + (" (earlier)" if r.earlier else " (resumed)" if r.resumed else "")
        cells = ([r.problem, status, _ms(r.best_ms), bar, _x(r.speedup_vs_best_baseline)]
                 + [_x(by_label.get(label)) for label in labels] + [_x(r.speedup_vs_input)]
                 + [_pct(r.pct_of_floor), _pct(r.best_baseline_pct_of_floor), _int(r.candidates),
                    _minutes(r.search_wall_s if r.search_wall_s is not None else r.process_s), r.place,
                    _cell(r.reason)])  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", _geomean_line("vs the best baseline", table.vs_best_baseline),
              _geomean_line("vs the best baseline", table.vs_best_baseline_headroom),
              _geomean_line("vs the input kernel", table.vs_input), _wall_line(table)]  # fmt: skip
    return "\n".join(lines) + "\n"


def _geomean_line(what: str, g: GeoMean) -> str:
    value = f"**{g.value:.3f}x**" if g.value is not None else "none"
    return f"- {what}, geometric mean over {g.over} ({g.count}): {value}"


def _wall_line(table: SuiteTable) -> str:
    done = sum(1 for r in table.rows if r.status in ("ok", "no_result"))
    line = (f"- suite wall time: {_minutes(table.suite_wall_s)} min on {len(table.places)} place(s) at once; "
            f"the {done} finished searches' own wall times, summed: {_minutes(table.searches_wall_s)} min; "
            f"search processes of this run, summed: {_minutes(table.process_s)} min")  # fmt: skip
    if table.suite_wall_s > 0 and table.process_s > 0:
        line += f" ({table.process_s / table.suite_wall_s:.2f}x the suite's wall time)"
    return line


def _baseline_order(label: str) -> tuple[int, str]:
    known = ["eager", "compile", "compile-max-autotune"]
    return (known.index(label) if label in known else len(known), label)


def _on_gpu(summary: dict[str, Any]) -> bool:
    spec = summary.get("spec")
    return isinstance(spec, dict) and str(spec.get("device", "")).startswith("cuda")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None



def _ms(ms: float | None) -> str:
    return f"{ms:.4g}" if ms is not None else ""


def _x(ratio: float | None) -> str:
    if ratio is None:
        return ""
    return (
        f"{ratio:.3f}x" if ratio >= 0.1 else f"{ratio:.2g}x"
    )  # an interpreter's time beside eager: 0.00011x


def _pct(pct: float | None) -> str:
    return f"{pct:.0f} %" if pct is not None else ""


def _int(n: int | None) -> str:
    return str(n) if n is not None else ""


def _minutes(seconds: float | None) -> str:
    return f"{seconds / 60:.1f}" if seconds is not None else ""


def _cell(text: str) -> str:
    """A reason as one table cell: one line, no column bar, cut to 200 characters (suite.json has it whole)."""
    flat = " ".join(text.split()).replace("|", "/")
    return flat if len(flat) <= 200 else flat[:197] + "..."
