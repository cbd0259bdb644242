"""The four prompts of a round, built from records: diagnose, optimize, refine (after a failed
verification) and reflect (after an attempt). Each fills one template file; ``template_dir`` is a
folder of user templates searched before the package's own, file by file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from beamsearch.records.schema import Attempt, Bottleneck, Floor, Profile, Roofline, Verdict
from profiling.peaks import Peaks
from prompts import sections
from prompts.records import DiagnosisReply, Reflection
from prompts.templates import render_template

DEFAULT_MAX_BOTTLENECKS = 2
DEFAULT_MAX_ATTEMPTS = 5  # older attempts add length more than insight


def json_schema_text(model: type[Any] | TypeAdapter[Any]) -> str:
    """The model's JSON schema, without pydantic's per-field titles (they repeat the field names)."""
    adapter = model if isinstance(model, TypeAdapter) else TypeAdapter(model)
    return json.dumps(_drop_titles(adapter.json_schema()), indent=2)


def _drop_titles(node: Any) -> Any:
    if isinstance(node, dict):
        # "title" is only pydantic's annotation when its value is a string; a property named "title"
        # maps to a dict and stays.
        return {k: _drop_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


def _rules(template_dir: Path | None) -> str:
    return render_template("rules", {}, template_dir).strip()


def build_diagnosis_prompt(
    *,
    problem_source: str,
    kernel_source: str,
    peaks: Peaks,
    profile: Profile | None,
    roofline: Roofline | None,
    floor: Floor | None,
    measured_ms: float | None,
    dtype: str = "bf16",
    max_bottlenecks: int = DEFAULT_MAX_BOTTLENECKS,
    template_dir: Path | None = None,
    interpreted: bool = False,
) -> str:
    """Ask for ``max_bottlenecks`` ranked bottlenecks as a JSON array of ``Bottleneck``.

    ``profile``/``roofline``/``floor``/``measured_ms`` may be None (no ncu, unknown GPU, no timing): the
    prompt then says so instead of showing numbers.
    """
    if max_bottlenecks < 1:
        raise ValueError(f"max_bottlenecks must be at least 1, got {max_bottlenecks}")
    values = {
        "gpu": sections.format_peaks(peaks),
        "roofline": sections.format_roofline(roofline),
        "floor": sections.format_floor(floor, measured_ms, interpreted),
        "metrics": sections.format_metrics(profile),
        "dtype": dtype,
        "problem_source": problem_source.strip(),
        "kernel_source": kernel_source.strip(),
        "max_bottlenecks": max_bottlenecks,
        "schema": json_schema_text(DiagnosisReply),
    }
    return render_template("diagnose", values, template_dir)


def build_optimization_prompt(
    *,
    problem_source: str,
    kernel_source: str,
    bottleneck: Bottleneck,
    attempts: list[Attempt],
    measured_ms: float | None = None,
    floor: Floor | None = None,
    dtype: str = "bf16",
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    template_dir: Path | None = None,
    interpreted: bool = False,
) -> str:
    """Ask for one complete rewritten file aimed at ``bottleneck``; the last ``max_attempts`` attempts
    (oldest first) are shown with their outcomes and lessons."""
    values = {
        "problem_source": problem_source.strip(),
        "kernel_source": kernel_source.strip(),
        "performance": sections.format_performance(measured_ms, floor, interpreted),
        "bottleneck": sections.format_bottleneck(bottleneck),
        "attempts": sections.format_attempts(attempts, max_attempts),
        "dtype": dtype,
        "rules": _rules(template_dir),
    }
    return render_template("optimize", values, template_dir)


def build_refinement_prompt(
    *,
    problem_source: str,
    kernel_source: str,
    verdict: Verdict,
    dtype: str = "bf16",
    template_dir: Path | None = None,
) -> str:
    """Ask for a corrected complete file after ``verdict`` (which did not pass)."""
    if verdict.passed:
        raise ValueError("the verdict passed: there is nothing to refine")
    values = {
        "problem_source": problem_source.strip(),
        "kernel_source": kernel_source.strip(),
        "verdict": sections.format_verdict(verdict),
        "dtype": dtype,
        "rules": _rules(template_dir),
    }
    return render_template("refine", values, template_dir)


def build_reflection_prompt(
    *,
    bottleneck: Bottleneck,
    parent_ms: float | None,
    child_ms: float | None = None,
    verdict: Verdict | None = None,
    note: str = "",
    parent_source: str = "",
    child_source: str = "",
    template_dir: Path | None = None,
) -> str:
    """Ask for a ``Reflection`` (expected, observed, lesson, try_next) on one attempt.

    The outcome is the failure when ``verdict`` did not pass, else ``child_ms`` against ``parent_ms``.
    The sources, when given, are shown as a unified diff (cut at ``sections.DIFF_CHARS``).
    """
    values = {
        "bottleneck": sections.format_bottleneck(bottleneck),
        "note": note.strip() or "(no description given)",
        "diff": sections.format_diff(parent_source, child_source).rstrip("\n"),
        "parent_time": sections.format_ms(parent_ms),
        "outcome": sections.format_outcome(parent_ms, child_ms, verdict),
        "schema": json_schema_text(Reflection),
    }
    return render_template("reflect", values, template_dir)
