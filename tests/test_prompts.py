"""Prompts: templates and their override folder, builders, and reply parsers (on KernelAgent's real
diagnosis replies where the shared fixtures are present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from beamsearch.records.schema import (
    Attempt,
    Bottleneck,
    CheckResult,
    Evidence,
    Fix,
    Floor,
    KernelProfile,
    Profile,
    RootCause,
    Tolerance,
    Verdict,
    Work,
)
from profiling.metrics import COMPUTE_SOL, MEMORY_SOL, METRICS, TENSOR_INST, TENSOR_PIPE
from profiling.peaks import Peaks
from profiling.roofline import classify
from prompts.builders import (
    build_diagnosis_prompt,
    build_optimization_prompt,
    build_refinement_prompt,
    build_reflection_prompt,
)
from prompts.parsers import (
    BOTTLENECKS,
    ReplyParseError,
    extract_json,
    extract_kernel,
    extract_kernels,
    parse_diagnosis,
    parse_reflection,
    repair_prompt,
)
from prompts.records import Reflection
from prompts.templates import (
    MissingPlaceholder,
    TemplateNotFound,
    load_template,
    placeholders,
    render,
    template_names,
)
from tests.conftest import SHARED

ROOT = Path(__file__).resolve().parents[1]
TRACES = SHARED / "fixtures" / "kernelagent-traces"
REPLIES = sorted(TRACES.glob("*/round_*/bottleneck_response.txt"))
NO_FIXTURES = f"shared fixtures not found at {TRACES} (they live beside the project, in ../shared)"
RMSNORM = ROOT / "artifacts" / "36_RMSNorm"

KERNEL = """import triton


def kernel_function(x):
    return x
"""


# ------------------------------------------------------------------------------ saved LLM replies


@pytest.mark.parametrize(
    "reply_path",
    [pytest.param(p, id=f"{p.parent.parent.name[:20]}-{p.parent.name}") for p in REPLIES]
    or [pytest.param(None, marks=pytest.mark.skip(reason=NO_FIXTURES))],
)
def test_saved_diagnosis_replies_parse_as_their_strategy(reply_path: Path) -> None:
    expected = BOTTLENECKS.validate_python(json.loads((reply_path.parent / "strategy.json").read_text()))
    got = parse_diagnosis(reply_path.read_text())
    assert got == expected and all(isinstance(b, Bottleneck) for b in got)


def test_all_forty_saved_replies_are_there() -> None:
    if not TRACES.is_dir():
        pytest.skip(NO_FIXTURES)
    assert len(REPLIES) == 40


def test_saved_reply_parses_inside_prose_and_a_json_fence() -> None:
    if not REPLIES:
        pytest.skip(NO_FIXTURES)
    raw = REPLIES[0].read_text()
    wrapped = f"Here is my analysis [see the metrics].\n\n```json\n{raw}\n```\nHope this helps."
    assert parse_diagnosis(wrapped) == parse_diagnosis(raw)


# ---------------------------------------------------------------------------------- extract_kernel


def test_extract_kernel_takes_the_last_block_that_defines_kernel_function() -> None:
    reply = (
        "First a sketch:\n```python\ndef kernel_function(x):\n    return 1\n```\n"
        "A helper:\n```py\ndef helper():\n    pass\n```\n"
        f"The final file:\n```\n{KERNEL}```\nAnd usage:\n```python\nkernel_function(x)\n```\n"
    )
    assert extract_kernel(reply) == KERNEL


@pytest.mark.parametrize("fence", ["```python", "```py", "```", "```Python3", "````python"])
def test_extract_kernel_accepts_python_py_and_bare_fences(fence: str) -> None:
    close = "`" * fence.count("`")
    assert extract_kernel(f"Here:\n{fence}\n{KERNEL}{close}\n") == KERNEL


def test_a_longer_fence_keeps_inner_triple_backticks() -> None:
    source = KERNEL + 'DOC = """\n```\nnot a fence\n```\n"""\n'
    assert extract_kernel(f"````python\n{source}````\n") == source


def test_a_stray_empty_fence_at_the_end_is_not_a_truncation() -> None:
    assert extract_kernel(f"```python\n{KERNEL}```\n```\n") == KERNEL


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        ("", "empty", "empty"),
        ("   \n\t", "empty", "empty"),
        ("I would fuse the two loops and use a larger block.", "no_code_block", "no ```python code block"),
        ('```json\n{"a": 1}\n```', "no_code_block", "only blocks marked json"),
        (
            "```python\ndef helper(x):\n    return x\n```",
            "no_kernel_function",
            "defines `def kernel_function",
        ),
        ('```python\nX = """\ndef kernel_function(x):\n"""\n```', "no_kernel_function", "does not define it"),
        (f"```python\n{KERNEL}", "truncated", "never closed"),
        (
            f"```python\n{KERNEL}```\nNow a better one:\n```python\nimport triton\ndef kernel_fu",
            "truncated",
            "line 9 is never closed",
        ),
        ("```python\ndef kernel_function(x)\n    return x\n```", "syntax_error", "does not parse"),
    ],
)
def test_extract_kernel_errors_say_why(reply: str, kind: str, words: str) -> None:
    with pytest.raises(ReplyParseError) as info:
        extract_kernel(reply)
    assert info.value.kind == kind and words in str(info.value), str(info.value)
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------------- extract_kernels

OTHER = KERNEL.replace("return x", "return x * 1")


def test_extract_kernels_gives_every_kernel_block_in_the_reply_order() -> None:
    reply = (
        f"Two options.\nFirst:\n```python\n{KERNEL}```\nA helper:\n```py\ndef helper():\n    pass\n```\n"
        f"Second:\n```\n{OTHER}```\nAnd usage:\n```python\nkernel_function(x)\n```\n"
    )
    found = extract_kernels(reply)
    assert [k.source for k in found.kernels] == [KERNEL, OTHER]
    assert [k.line for k in found.kernels] == [3, 16] and found.skipped == []
    assert extract_kernel(reply) == OTHER  # a replay still takes the final answer


def test_extract_kernels_keeps_repeats_for_the_caller_to_judge() -> None:
    found = extract_kernels(f"```python\n{KERNEL}```\nAgain:\n```python\n{KERNEL}```\n")
    assert [k.source for k in found.kernels] == [KERNEL, KERNEL]


def test_a_kernel_block_that_does_not_parse_beside_one_that_does_is_skipped_and_said() -> None:
    broken = "```python\ndef kernel_function(x)\n    return x\n```\n"
    found = extract_kernels(f"{broken}Fixed:\n```python\n{KERNEL}```\n")
    assert [k.source for k in found.kernels] == [KERNEL]
    (why,) = found.skipped
    assert "(opened at line 1) does not parse" in why
    with pytest.raises(ReplyParseError) as info:  # none usable: the last block's error
        extract_kernels(broken + broken.replace("(x)", "(y)"))
    assert info.value.kind == "syntax_error" and "opened at line 5" in str(info.value)


@pytest.mark.parametrize("reply", ["", "no code", f"```python\n{KERNEL}```\n```python\ndef kernel_fu"])
def test_extract_kernels_raises_as_extract_kernel(reply: str) -> None:
    with pytest.raises(ReplyParseError) as theirs:
        extract_kernel(reply)
    with pytest.raises(ReplyParseError) as mine:
        extract_kernels(reply)
    assert mine.value.kind == theirs.value.kind


# ------------------------------------------------------------------------------------- extract_json

ONE = {"category": "memory", "summary": "two passes over x", "root_causes": [{"cause": "reload"}]}
TWO = {"category": "underutilized", "summary": "grid too small"}


def test_extract_json_reads_a_fenced_block_with_a_type_or_an_adapter() -> None:
    reply = f"Analysis first.\n```json\n{json.dumps([ONE, TWO])}\n```\n"
    assert extract_json(reply, list[Bottleneck]) == extract_json(reply, BOTTLENECKS)
    assert [b.category for b in extract_json(reply, list[Bottleneck])] == ["memory", "underutilized"]


def test_extract_json_skips_prose_brackets_and_brackets_inside_strings() -> None:
    tricky = dict(ONE, summary='indexes x[i] and writes "}" {sic}')
    reply = f"See [1] and {{this}}. The answer: {json.dumps([tricky])} -- done [end]"
    assert extract_json(reply, list[Bottleneck])[0].summary == tricky["summary"]


def test_an_open_bracket_in_prose_is_not_a_truncation() -> None:
    reply = f"Ratios are in [0, 1) here and (see [note). Answer:\n{json.dumps([ONE])}\nThat is all."
    assert extract_json(reply, list[Bottleneck])[0].summary == ONE["summary"]


def test_a_single_object_is_taken_as_a_list_of_one() -> None:
    assert extract_json(json.dumps(ONE), list[Bottleneck]) == [Bottleneck.model_validate(ONE)]


def test_a_list_wrapped_in_a_one_key_object_is_unwrapped() -> None:
    reply = json.dumps({"bottlenecks": [ONE, TWO]})
    assert len(extract_json(reply, list[Bottleneck])) == 2


@pytest.mark.parametrize(
    ("reply", "kind", "words"),
    [
        ("", "empty", "empty"),
        ("No JSON here, only words.", "no_json", "contains no JSON"),
        ('```json\n[{"category": "memory", "summary": "x",}]\n```', "invalid_json", "is not valid JSON"),
        ('[{"category": "memory", "summary": "x",}]', "invalid_json", "is not valid JSON"),
        ('[{"category": "latency", "summary": "x"}]', "invalid_schema", "0.category"),
        ('[{"category": "memory"}]', "invalid_schema", "summary: Field required"),
        ('Here it is:\n[{"category": "memory", "summary": "two pa', "truncated", "line 2 is never closed"),
        ('```json\n[{"category": "memory", "summary": "two pa', "truncated", "never closed"),
    ],
)
def test_extract_json_errors_say_why(reply: str, kind: str, words: str) -> None:
    with pytest.raises(ReplyParseError) as info:
        extract_json(reply, list[Bottleneck])
    assert info.value.kind == kind and words in str(info.value), str(info.value)


def test_schema_errors_name_the_field_for_a_single_object_reply() -> None:
    with pytest.raises(ReplyParseError, match="category") as info:
        extract_json('{"category": "latency", "summary": "x"}', list[Bottleneck])
    assert info.value.kind == "invalid_schema"


# ------------------------------------------------------------------------------- parse_* and repair


def test_parse_diagnosis_keeps_the_first_n_distinct_bottlenecks() -> None:
    repeat = dict(ONE, summary="  Two passes   over X ")
    got = parse_diagnosis(json.dumps([ONE, repeat, TWO, dict(TWO, summary="other")]), max_bottlenecks=2)
    assert [b.summary for b in got] == [ONE["summary"], TWO["summary"]]


def test_parse_diagnosis_rejects_an_empty_list() -> None:
    with pytest.raises(ReplyParseError, match="at least one bottleneck"):
        parse_diagnosis("```json\n[]\n```")


def test_parse_reflection() -> None:
    reply = (
        "```json\n"
        + json.dumps(
            {
                "expected": "one pass halves reads",
                "observed": "1.6x faster",
                "lesson": ["keep the single pass", "BLOCK_C 64 spills"],
                "try_next": "more warps",
            }
        )
        + "\n```"
    )
    got = parse_reflection(reply)
    assert isinstance(got, Reflection)
    assert got.lesson == "keep the single pass; BLOCK_C 64 spills" and got.try_next == "more warps"
    with pytest.raises(ReplyParseError, match="observed"):
        parse_reflection('{"expected": "x", "lesson": "y"}')


def test_repair_prompt_quotes_the_error_and_the_reply() -> None:
    reply = '[{"category": "latency", "summary": "x"}]'
    with pytest.raises(ReplyParseError) as info:
        parse_diagnosis(reply)
    text = repair_prompt(reply, info.value)
    assert str(info.value) in text and reply in text and not placeholders(text)
    long = repair_prompt("x" * 50_000, "invalid")
    assert "30000 more characters" in long and len(long) < 21_000


# --------------------------------------------------------------------------------------- templates


def test_render_substitutes_once_and_leaves_other_braces_alone() -> None:
    text = "{{a}} {x} {{ b }} {{{c}}} $d %(e)s"
    assert render(text, {"a": "{{c}}", "c": "C", "unused": 1}) == "{{c}} {x} {{ b }} {C} $d %(e)s"
    assert placeholders(text) == ["a", "c"]


def test_a_missing_placeholder_is_named_with_the_available_ones() -> None:
    with pytest.raises(MissingPlaceholder) as info:
        render("{{kernel_source}} {{gpu_nmae}} {{other}}", {"kernel_source": "k", "gpu_name": "H100"})
    e = info.value
    assert isinstance(e, KeyError)
    assert e.missing == ["gpu_nmae", "other"] and e.available == ["gpu_name", "kernel_source"]
    assert (
        str(e) == "the template has no value for {{gpu_nmae}}, {{other}}; available: gpu_name, kernel_source"
    )


def test_the_package_has_one_file_per_template() -> None:
    assert set(template_names()) == {"diagnose", "optimize", "refine", "refine_earlier", "reflect", "repair", "repair_code", "repeat", "rules"}
    assert load_template("diagnose") == load_template("diagnose.md")


def test_override_folder_comes_first_file_by_file(tmp_path: Path) -> None:
    (tmp_path / "optimize.md").write_text("CUSTOM for {{bottleneck}}")
    (tmp_path / "rules.md").write_text("MY RULES")
    assert load_template("optimize", tmp_path) == "CUSTOM for {{bottleneck}}"
    assert load_template("diagnose", tmp_path) == load_template("diagnose")  # not overridden
    (tmp_path / "extra.md").write_text("x")
    assert "extra" not in template_names() and "extra" in template_names(tmp_path)
    assert build_optimization_prompt(**optimization_args(), template_dir=tmp_path).startswith(
        "CUSTOM for Category:"
    )
    refine = build_refinement_prompt(**refinement_args(), template_dir=tmp_path)  # package refine, user rules
    assert "MY RULES" in refine and "Rules for the file" not in refine


def test_override_errors(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError, match="does not exist"):
        load_template("diagnose", tmp_path / "nope")
    with pytest.raises(TemplateNotFound, match="diagnose, optimize"):
        load_template("nonesuch", tmp_path)
    (tmp_path / "reflect.md").write_text("{{bottleneck}} and {{child_profile}}")
    with pytest.raises(
        MissingPlaceholder, match=r"\{\{child_profile\}\}; available: .*bottleneck, diff"
    ) as info:
        build_reflection_prompt(**reflection_args(), template_dir=tmp_path)
    assert str(tmp_path / "reflect.md") in str(info.value)


# ---------------------------------------------------------------------------------------- builders

BOTTLENECK = Bottleneck(
    category="memory",
    summary="The input is read twice",
    reasoning="DRAM throughput is high while SM throughput is low.",
    root_causes=[
        RootCause(
            cause="two passes",
            evidence=[
                Evidence(metric="dram__bytes_read.sum", value=7286447360.0, interpretation="twice the input")
            ],
        )
    ],
    recommended_fixes=[Fix(fix="keep the channel slice in registers", rationale="halves the reads")],
)
PEAKS = Peaks(
    device_name="NVIDIA H100 80GB HBM3",
    dram_gbps=3350.0,
    bf16_tflops=989.0,
    fp16_tflops=989.0,
    fp32_tflops=67.0,
    tf32_tflops=494.0,
    fp8_tflops=1979.0,
    sm_count=132,
    l2_bytes=50 * 2**20,
    source={"dram_gbps": "measured 2025-11-21"},
)
FLOOR = Floor(
    work=Work(bytes_moved=7_516_192_768, flops=0),
    dram_gbps=3350.0,
    tflops=989.0,
    memory_ms=2.2437,
    compute_ms=0.0,
    floor_ms=2.2437,
    bound="memory",
    peaks_source="measured",
)
FAILED = Verdict(
    passed=False,
    status="incorrect",
    reason="1 check failed: values",
    kernel_path="/tmp/k.py",
    checks=[
        CheckResult(name="values", passed=False, detail="seed 1: 37 elements off"),
        CheckResult(name="finite", passed=True),
    ],
    max_abs_err=0.5,
    max_rel_err=0.25,
    tolerance=Tolerance(atol=1e-2, rtol=1e-2),
    traceback="Traceback (most recent call last):\nAssertionError: boom",
)


def metrics() -> dict[str, float]:
    values = {m.key: float(i + 1) for i, m in enumerate(METRICS)}
    values[COMPUTE_SOL] = 20.4
    values[MEMORY_SOL] = 82.8
    values[TENSOR_PIPE] = values[TENSOR_INST] = 0.0
    return values


def diagnosis_args() -> dict:
    profile = Profile(
        available=True,
        kernels=[
            KernelProfile(
                name="_rmsnorm_kernel",
                launches=1,
                grid="(28672, 1, 1)",
                block="(128, 1, 1)",
                metrics=metrics(),
            )
        ],
        combined=metrics(),
    )
    return dict(
        problem_source=(RMSNORM / "problem.py").read_text(),
        kernel_source=(RMSNORM / "input_kernel.py").read_text(),
        peaks=PEAKS,
        profile=profile,
        roofline=classify(metrics()),
        floor=FLOOR,
        measured_ms=3.5475,
    )


def optimization_args() -> dict:
    attempts = [
        Attempt(kernel_hash=f"h{i}", note=f"change {i}", outcome=f"{1 + i / 10:.1f}x", lesson=f"lesson {i}")
        for i in range(7)
    ]
    return dict(
        problem_source=(RMSNORM / "problem.py").read_text(),
        kernel_source=(RMSNORM / "input_kernel.py").read_text(),
        bottleneck=BOTTLENECK,
        attempts=attempts,
        measured_ms=3.5475,
        floor=FLOOR,
    )


def refinement_args() -> dict:
    return dict(problem_source="class Model: ...", kernel_source=KERNEL, verdict=FAILED)


def reflection_args() -> dict:
    return dict(
        bottleneck=BOTTLENECK,
        parent_ms=3.5475,
        child_ms=2.25,
        note="one pass over the channels",
        parent_source=KERNEL,
        child_source=KERNEL.replace("return x", "return x + 0"),
    )


def assert_filled(text: str) -> None:
    assert not placeholders(text), placeholders(text)
    assert "{{" not in text and "}}" not in text


def test_diagnosis_prompt_has_every_section() -> None:
    text = build_diagnosis_prompt(**diagnosis_args(), max_bottlenecks=3)
    assert_filled(text)
    for part in (
        "NVIDIA H100 80GB HBM3",
        "3,350 GB/s (measured 2025-11-21)",
        "989 TFLOP/s",
        "132",
        "50 MiB",
        "Compute SOL (SM throughput): 20.4 %",
        "Class: memory",
        "Tensor cores: not used",
        "Floor: 2.2437 ms, memory-bound",
        "3.5475 ms",
        "63.2 % of the floor",
        "Warp stalls:",
        "[dram__bytes_read.sum]",
        "_rmsnorm_kernel: 1 launch(es)",
        "class Model(nn.Module)",
        "def kernel_function(",
        "Name the 3 most important",
        '"$defs"',
    ):
        assert part in text, part
    schema = text[text.rindex("```json\n") + 8 : text.rindex("```")]
    schema = json.loads(schema)
    assert set(schema["$defs"]) == {"Bottleneck", "RootCause", "Evidence", "Fix"}
    # One object, the shape structured output asks for too (not a bare array).
    assert schema["properties"]["bottlenecks"]["items"] == {"$ref": "#/$defs/Bottleneck"}
    assert schema["type"] == "object" and "title" not in schema["$defs"]["Fix"]
    assert schema["$defs"]["Bottleneck"]["required"] == ["category", "summary"]
    for section in ("SM and compute:", "Memory bandwidth and caches:", "Occupancy and resources:"):
        assert section in text


def test_diagnosis_prompt_without_profile_floor_or_time() -> None:
    args = diagnosis_args() | dict(
        profile=Profile(available=False, reason="ncu not found"), roofline=None, floor=None, measured_ms=None
    )
    text = build_diagnosis_prompt(**args)
    assert_filled(text)
    assert "No Nsight Compute profile: ncu not found" in text and "Floor: unknown." in text
    assert "Name the 2 most important" in text  # the default
    with pytest.raises(ValueError, match="at least 1"):
        build_diagnosis_prompt(**args, max_bottlenecks=0)


def test_optimization_prompt_shows_bottleneck_recent_attempts_and_rules() -> None:
    text = build_optimization_prompt(**optimization_args(), max_attempts=5)
    assert_filled(text)
    for part in (
        "The input is read twice",
        "dram__bytes_read.sum = 7286447360: twice the input",
        "keep the channel slice in registers (why: halves the reads)",
        "(2 older attempts not shown)",
        "[h6] change 6",
        "Outcome: 1.6x",
        "Lesson: lesson 6",
        "63.2 % of the floor",
        "Keep `kernel_function`",
        "no caching",
        "single ```python block",
    ):
        assert part in text, part
    assert "[h1]" not in text
    assert "None yet." in build_optimization_prompt(**optimization_args() | {"attempts": []})


def test_refinement_prompt_shows_the_verdict() -> None:
    text = build_refinement_prompt(**refinement_args())
    assert_filled(text)
    for part in (
        "Status: incorrect",
        "Reason: 1 check failed: values",
        "- values: seed 1: 37 elements off",
        "0.5 absolute",
        "AssertionError: boom",
        "def kernel_function(x):",
        "Keep `kernel_function`",
    ):
        assert part in text, part
    assert "- finite" not in text
    with pytest.raises(ValueError, match="nothing to refine"):
        build_refinement_prompt(**refinement_args() | {"verdict": FAILED.model_copy(update={"passed": True})})


def test_reflection_prompt_for_a_faster_child_and_a_failed_one() -> None:
    text = build_reflection_prompt(**reflection_args())
    assert_filled(text)
    for part in (
        "Parent kernel: 3.5475 ms.",
        "2.2500 ms",
        "1.577x",
        "one pass over the channels",
        "-    return x\n+    return x + 0",
        "The input is read twice",
        '"try_next"',
    ):
        assert part in text, part
    failed = build_reflection_prompt(**reflection_args() | {"child_ms": None, "verdict": FAILED})
    assert_filled(failed)
    assert "failed verification (incorrect): 1 check failed: values" in failed
