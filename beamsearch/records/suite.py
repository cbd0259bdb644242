"""A suite's records: one row per problem searched, and the table over them (``python -m beamsearch.suite``).

``OUT/suite.json`` is a ``SuiteTable``; ``beamsearch/suite_table.py`` makes the rows from each search's
``summary.json`` and renders the table. Other tools (a comparison of two suites, a session's record) read
the JSON through these models.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from beamsearch.records.schema import Record

SuiteStatus = Literal[
    "ok",  # the search finished with a best kernel
    "no_result",  # the search finished (summary.json) without a best kernel
    "failed",  # not found, refused, crashed, or exited non-zero without a summary
    "timed_out",  # stopped at --search-timeout-minutes; its trace is resumable
    "interrupted",  # the suite was stopped while it ran; its trace is resumable
    "not_run",  # the suite was stopped before it started
]


class BaselineRatio(Record):
    label: str
    ms: float | None
    ratio: float | None = Field(
        description="the baseline's time over the best kernel's (> 1: ours is faster)"
    )


class SuiteRow(Record):
    problem: str
    folder: str | None = Field(None, description="the search's run folder (--out of its run)")
    status: SuiteStatus
    reason: str = Field("", description="why it failed: exit code and the last meaningful stderr line")
    exit_code: int | None = None
    earlier: bool = Field(False, description="finished by an earlier run of the suite: not run again")
    resumed: bool = Field(False, description="continued a search an earlier run of the suite left unfinished")
    place: str = Field("", description="where it ran: 'gpu 0', 'cpu 1', or a Ray node and its GPU")
    gpu_name: str = ""
    best_ms: float | None = None
    best_baseline: str | None = Field(None, description="the fastest PyTorch baseline's label (GPU runs)")
    best_baseline_ms: float | None = None
    best_baseline_library: list[str] = Field([], description="its operators that run a vendor library "
                                             "(``addmm (cuBLAS)``): a bar no Triton seed holds")  # fmt: skip
    speedup_vs_best_baseline: float | None = None
    baselines: list[BaselineRatio] = []
    pct_of_floor: float | None = Field(
        None, description="the physical floor's time over the best kernel's, in %"
    )
    best_baseline_pct_of_floor: float | None = Field(None, description="the floor's time over the best "
                                                     "baseline's, in %")  # fmt: skip
    speedup_vs_input: float | None = None
    candidates: int | None = None
    search_wall_s: float | None = Field(None, description="the search's own wall time (summary.json's wall_s, "
                                        "every session of it)")  # fmt: skip
    process_s: float | None = Field(None, description="seconds its process ran in this run of the suite")
    stop_reason: str = ""


class GeoMean(Record):
    value: float | None
    count: int = Field(description="how many problems it is over")
    over: str = Field(description="which problems, in words")


class SuiteTable(Record):
    rows: list[SuiteRow]
    vs_best_baseline: GeoMean = Field(
        description="geometric mean of speedup_vs_best_baseline over the finished"
    )
    vs_best_baseline_headroom: GeoMean = Field(description="the same over the problems whose best baseline runs "
                                               "below headroom_pct of the floor")  # fmt: skip
    vs_input: GeoMean = Field(description="geometric mean of speedup_vs_input over the finished")
    headroom_pct: float = 80.0
    suite_wall_s: float = Field(description="this run of the suite, start to end")
    searches_wall_s: float = Field(description="the finished searches' own wall times, summed")
    process_s: float = Field(
        description="the seconds of the search processes this run of the suite ran, summed"
    )
    places: list[str] = Field(
        description="where searches ran at once: one per GPU share, CPU slot or Ray share"
    )
    search_args: list[str] = Field([], description="the options every search got (after --)")
    started_at: str = Field("", description="UTC, ISO 8601")
