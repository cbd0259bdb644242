"""Markdown tables from saved ``beamsearch.bench --json`` reports (for committing GPU results).

    python scripts/bench_markdown.py REPORT.json [REPORT.json ...]

One row per timed target: median ms, min, std, n, and speedups vs eager and torch.compile (baseline
time / target time, from the same report, i.e. measured side by side in one run).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beamsearch.records.schema import BenchReport


def rows(report: BenchReport) -> list[str]:
    medians = {r.target: r.ranked_ms for r in report.rows}
    out = []
    for r in report.rows:
        t = r.timing.timing if r.timing and r.timing.timing else None
        status = r.verdict.status if r.verdict and not r.verdict.passed else (r.timing.status if r.timing else "-")
        if t is None:
            reason = r.verdict.reason if r.verdict and not r.verdict.passed else (r.timing.reason if r.timing else "")
            out.append(f"| {report.problem} | {r.target if r.verdict else r.label} | {status}: {reason} | | | | | |")
            continue
        ratios = [f"{medians[b] / t.median_ms:.2f}x" if medians.get(b) else "" for b in ("eager", "compile")]
        name = r.label if r.verdict is None else r.target
        out.append(
            f"| {report.problem} | {name} | {t.median_ms:.3f} | {t.min_ms:.3f} | {t.std_ms:.3f} | {t.n} | "
            + " | ".join(ratios) + " |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reports", nargs="+", type=Path)
    args = parser.parse_args()
    print("| problem | target | median ms | min ms | std ms | n | vs eager | vs torch.compile |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.reports:
        for line in rows(BenchReport.model_validate_json(path.read_text())):
            print(line)


if __name__ == "__main__":
    main()
