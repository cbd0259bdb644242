"""The judge-runner messages (``workers.harness.runner_messages``): what the judge accepts from the runner,
without starting a process (the adversarial corpus sends the same through a real runner)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from workers.harness.runner_messages import (
    REQUEST,
    CallReply,
    CallReport,
    ErrorReply,
    LoadReply,
    TimeRequest,
    describe_invalid,
    read_reply,
)


def _call_reply() -> dict[str, Any]:
    report = CallReport(peak_bytes=0, same_as_previous=[], forbidden={"aten::mul": 2}, host_reads={},
                        threads_started=0, call_s=0.01, tampering=[], background=[])  # fmt: skip
    return CallReply(report=report, structure=None, n_outputs=1).model_dump(mode="json")


def test_a_reply_the_runner_builds_reads_back_as_the_same_model() -> None:
    body = _call_reply()
    reply = read_reply("call", body)
    assert isinstance(reply, CallReply) and reply.report.forbidden == {"aten::mul": 2}
    load = read_reply(
        "load", LoadReply(sandbox="landlock", tampering=[], background=[]).model_dump(mode="json")
    )
    assert isinstance(load, LoadReply) and load.sandbox == "landlock"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (
            lambda b: b["report"].update(threads_started="0"),
            "report.threads_started",
        ),  # no string for a count
        (lambda b: b["report"].update(call_s=True), "report.call_s"),  # no bool for a number
        (lambda b: b["report"].update(forbidden=[]), "report.forbidden"),
        (lambda b: b["report"].update(same_as_previous=[-1]), "report.same_as_previous.0"),
        (lambda b: b.update(verdict="ok"), "verdict: Extra inputs are not permitted"),
        (lambda b: b["report"].pop("tampering"), "report.tampering: Field required"),
    ],
)
def test_a_reply_with_a_wrong_type_an_unknown_or_a_missing_field_is_refused_naming_it(
    change, named: str
) -> None:
    body = _call_reply()
    change(body)
    with pytest.raises(ValidationError) as e:
        read_reply("call", body)
    assert named in describe_invalid(e.value)


def test_an_error_reply_carries_only_a_status_the_runner_may_report() -> None:
    error = {"status": "runtime_error", "reason": "ValueError: no", "traceback": ""}
    assert isinstance(read_reply("call", {"error": error}), ErrorReply)
    with pytest.raises(ValidationError) as e:
        read_reply("call", {"error": {**error, "status": "ok"}})  # a passed verdict's status
    assert "error.status" in describe_invalid(e.value)


def test_a_long_list_of_problems_is_cut_to_one_line() -> None:
    with pytest.raises(ValidationError) as e:
        read_reply("call", {"report": {}, "structure": None, "n_outputs": 1})
    text = describe_invalid(e.value)
    assert "\n" not in text and "more)" in text and text.startswith("CallReply: report.")


def test_requests_are_told_apart_by_their_op() -> None:
    body = {"op": "time", "inputs": [{"tensor": 0}, 1e-5], "values": {}, "dtype": "bf16", "shapes": "small",
            "budget": {"warmup_ms": 1, "rep_ms": 2.0, "min_reps": 3, "max_reps": 5}}  # fmt: skip
    request = REQUEST.validate_python(body)
    assert isinstance(request, TimeRequest) and request.budget.screen_above_ms is None
    with pytest.raises(ValidationError):
        REQUEST.validate_python({"op": "unpickle"})


def test_the_timing_in_a_time_reply_is_read_strictly_too() -> None:
    timing = {"median_ms": 1.0, "mean_ms": 1.0, "std_ms": 0.0, "min_ms": 1, "n": 3, "warmup_n": 0, "method": "events",
              "device_name": "cpu", "on_gpu": False, "dtype": "bf16", "shapes": "small"}  # fmt: skip
    body = {"timing": timing, "kept": [], "sampled": {"reps": [], "values": []}, "threads_started": 0,
            "peak_bytes": 0, "tampering": [], "background": []}  # fmt: skip
    assert read_reply("time", body).timing.min_ms == 1.0  # an integer is a number
    with pytest.raises(ValidationError) as e:
        read_reply("time", {**body, "timing": {**timing, "median_ms": "0.001"}})
    assert "timing.median_ms" in describe_invalid(e.value)
