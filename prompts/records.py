"""Records that only the prompts produce: what an LLM concludes about an attempt."""

from __future__ import annotations

from pydantic import Field, field_validator

from beamsearch.records.schema import Bottleneck, Record


class Reflection(Record):
    """A look back at one attempt to speed up a kernel."""

    # The next optimization prompt shows ``lesson`` (and ``try_next``) as the attempt's lesson.

    expected: str = Field(description="what the change was meant to do, and why")
    observed: str = Field(description="what happened instead (or as well): time, failure, its cause")
    lesson: str = Field(description="what to avoid, or to keep, in later attempts on this kernel")
    try_next: str = Field("", description="one concrete change worth trying next")

    @field_validator("expected", "observed", "lesson", "try_next", mode="before")
    @classmethod
    def _join_lists(cls, v: object) -> object:  # models sometimes answer with a list of points
        if isinstance(v, list) and all(isinstance(item, str) for item in v):
            return "; ".join(v)
        return v


class DiagnosisReply(Record):
    """The diagnosis asked for, in the prompt and as structured output alike: one top-level object (the
    parser also takes a bare array, which some models answer with)."""

    bottlenecks: list[Bottleneck]
