"""Parsing ``ncu --csv --page raw`` output and combining launches into kernel and whole-call profiles.

The raw page is CSV: for each profiled process a header row (first cell ``ID``), a units row, then a
row per kernel launch; runs may be concatenated, and ncu's own ``==PROF==``/``==WARNING==`` lines are
mixed in. Numbers may carry thousands separators; ``n/a`` means the metric was not collected.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field

from beamsearch.records.schema import KernelProfile
from profiling.metrics import BY_KEY, DURATION, METRICS

NAME_COLUMN = "Kernel Name"
DEVICE_NAME_COLUMN = "device__attribute_display_name"


@dataclass
class Launch:
    kernel_name: str
    grid: str
    block: str
    device_name: str
    metrics: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def parse_raw_csv(text: str) -> list[Launch]:
    """Every launch in the output, with the schema's metrics as floats (missing ones listed)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    launches: list[Launch] = []
    header: list[str] | None = None
    expect_units = False
    for row in csv.reader(lines):
        if row and row[0] == "ID":
            header, expect_units = row, True
            continue
        if header is None:
            continue
        if expect_units:  # the units row follows every header row
            expect_units = False
            if not row or not row[0]:
                continue
        cells = dict(zip(header, row, strict=False))
        launch = Launch(
            kernel_name=cells.get(NAME_COLUMN, ""),
            grid=cells.get("Grid Size", ""),
            block=cells.get("Block Size", ""),
            device_name=cells.get(DEVICE_NAME_COLUMN, ""),
        )
        for m in METRICS:
            value = _number(cells.get(m.key))
            if value is None:
                launch.missing.append(m.key)
            else:
                launch.metrics[m.key] = value
        launches.append(launch)
    return launches


def _number(cell: str | None) -> float | None:
    if cell is None:
        return None
    text = cell.strip().replace(",", "")
    if not text or text.lower() == "n/a":
        return None
    try:
        return float(text)
    except ValueError:
        return None


def is_own_kernel(kernel_name: str, own_names: list[str]) -> bool:
    """Triton names its GPU function after the @triton.jit function; ncu may add a parameter list."""
    base = kernel_name.split("(")[0].strip()
    return any(base == n or base.startswith(n + "_") or base.startswith(n + "<") for n in own_names)


def combine(metric_sets: list[dict[str, float]]) -> dict[str, float]:
    """Counts summed; everything else weighted by kernel duration (equal weights if none has one)."""
    if not metric_sets:
        return {}
    weights = [s.get(DURATION, 0.0) for s in metric_sets]
    if sum(weights) <= 0:
        weights = [1.0] * len(metric_sets)
    out: dict[str, float] = {}
    for key in {k for s in metric_sets for k in s}:
        pairs = [(s[key], w) for s, w in zip(metric_sets, weights, strict=True) if key in s]
        metric = BY_KEY.get(key)
        if metric is not None and metric.combine == "sum":
            out[key] = sum(v for v, _ in pairs)
        else:
            total_w = sum(w for _, w in pairs)
            out[key] = sum(v * w for v, w in pairs) / total_w if total_w else pairs[0][0]
    return out


def kernel_profiles(launches: list[Launch]) -> list[KernelProfile]:
    """One profile per kernel name, its launches combined, in order of first launch."""
    grouped: dict[str, list[Launch]] = {}
    for launch in launches:
        grouped.setdefault(launch.kernel_name, []).append(launch)
    return [
        KernelProfile(
            name=name,
            launches=len(group),
            grid=group[0].grid,
            block=group[0].block,
            metrics=combine([g.metrics for g in group]),
            missing=sorted({k for g in group for k in g.missing}),
        )
        for name, group in grouped.items()
    ]
