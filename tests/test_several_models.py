"""Several models and several samples a prompt (issue 49), through the real client (litellm) against scripted
OpenAI-compatible servers on 127.0.0.1 under different model names: the task path asks its own model's
server, --samples takes every kernel of every reply, the options, the console's and the report's per-model
table, and (slow) rounds of real tasks whose shares move toward the model whose kernels pass."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest
from rich.console import Console

from beamsearch.display import Display
from beamsearch.model_shares import OUT_AFTER, ModelRotation
from beamsearch.records.config import SearchConfig
from beamsearch.records.llm import ModelEndpoint, ModelsState, ModelStats
from beamsearch.records.schema import Diagnosis, Kernel, RunSpec
from beamsearch.records.state import BeamEntry, BeamState, Summary, Task
from beamsearch.run import parse_args, resumed_config
from tests.conftest import DATA
from tests.llm_server import Reply, Respond, ScriptedLLMServer, Slow
from workers.actor import task as task_fns
from workers.proposers.llm import LLMProposer
from workers.proposers.llm_client import LLMClient, LLMConfig

PROBLEM = str(DATA / "scale_rows_problem.py")
SOURCE = (DATA / "search" / "input_kernel.py").read_text()
SPEC = RunSpec(problem_path=PROBLEM, shapes="small", device="cpu")
DIAGNOSIS = json.dumps([{"category": "memory", "summary": "rows per program"}])


def variant(rows: int) -> str:
    return SOURCE.replace("BLOCK_R = 4", f"BLOCK_R = {rows}")


def fenced(*sources: str) -> str:
    return "".join(f"```python\n{s}```\n" for s in sources)


def several(servers: dict[str, ScriptedLLMServer], **settings: object) -> SearchConfig:
    models = [ModelEndpoint(model=f"openai/{name}", api_base=s.api_base) for name, s in servers.items()]
    return SearchConfig(problem=PROBLEM, llm=models[0].model, api_base=models[0].api_base, models=models,
                        llm_timeout_s=3.0, llm_retries=0, **settings)  # fmt: skip


def parent() -> BeamEntry:
    return BeamEntry(id="input", kernel=Kernel(source=SOURCE, origin="input"), ranked_ms=4.8, round=0)


def asked(server: ScriptedLLMServer) -> list[str]:
    return ["\n".join(m["content"] for m in r.body["messages"]) for r in server.chat_requests()]


# --- samples --------------------------------------------------------------------------------------------


def rows_in_turn() -> Respond:
    """A rewrite reply whose kernel differs each time asked (one per choice), the second a repeat of the first."""
    rows = iter([8, 8, 16, 2, 32, 64])
    return Respond(lambda prompt: Reply(fenced(variant(next(rows))), prompt_tokens=100, completion_tokens=50))


def test_samples_are_one_request_of_n_choices_where_the_server_gives_them() -> None:
    with ScriptedLLMServer(default=rows_in_turn(), choices=True) as server:
        client = LLMClient(LLMConfig(model="openai/n-model", api_base=server.api_base, max_retries=0))
        proposer = LLMProposer(client, Path(PROBLEM).read_text(), samples=3, model="openai/n-model")
        kernels = proposer.propose(parent().kernel, Diagnosis(bottlenecks=[], source="rules"), [])
        (request,) = server.chat_requests()
    assert request.body["n"] == 3
    # three replies: 8, 8 again (dropped as a repeat), 16
    assert [k.source for k in kernels] == [variant(8), variant(16)]
    assert kernels[0].note.endswith("(sample 1 of 3)") and kernels[1].note.endswith("(sample 3 of 3)")
    assert proposer.reply_notes == [
        "kernel 2 of the reply repeats kernel 1 of the same reply: not tried again"
    ]
    calls = [e.call for e in proposer.exchanges]
    assert [c.status for c in calls] == ["ok"] * 3
    # the request's tokens count once, on its first reply
    assert [c.prompt_tokens + c.completion_tokens for c in calls] == [100 + 150, 0, 0]


def test_samples_are_several_requests_where_the_server_gives_one_choice() -> None:
    with ScriptedLLMServer(default=rows_in_turn()) as server:  # answers one choice whatever n says
        client = LLMClient(LLMConfig(model="openai/one-choice", api_base=server.api_base, max_retries=0))
        calls = client.complete_many("# The bottleneck\nrewrite it", 3)
        requests = server.chat_requests()
    assert len(requests) == 3 and requests[0].body["n"] == 3 and all("n" not in r.body for r in requests[1:])
    assert sorted(c.text for c in calls) == sorted(fenced(variant(r)) for r in (8, 8, 16))
    assert all(c.status == "ok" and c.prompt_tokens == 100 for c in calls)


def test_samples_with_no_code_in_any_reply_ask_once_more() -> None:
    replies = iter([Reply("prose one"), Reply("prose two"), Reply(fenced(variant(8)))])
    with ScriptedLLMServer(default=Respond(lambda prompt: next(replies)), choices=False) as server:
        client = LLMClient(LLMConfig(model="openai/p", api_base=server.api_base, max_retries=0))
        proposer = LLMProposer(client, Path(PROBLEM).read_text(), samples=2)
        kernels = proposer.propose(parent().kernel, Diagnosis(bottlenecks=[], source="rules"), [])
        texts = asked(server)
    assert [k.source for k in kernels] == [variant(8)]
    assert len(texts) == 3 and "no ```python code block" in texts[2]
    assert [e.parse_error != "" for e in proposer.exchanges] == [True, True, False]


# --- each task asks its own model -----------------------------------------------------------------------


def prose(prompt: str) -> Reply:
    return Reply(DIAGNOSIS if "what limits its speed" in prompt else "I would tile it.")


def test_a_task_asks_the_server_of_its_model_and_its_result_names_it() -> None:
    with ScriptedLLMServer(default=Respond(prose)) as a, ScriptedLLMServer(default=Respond(prose)) as b:
        config = several({"a": a, "b": b})
        task = Task(
            id="r1-t0", round=1, direction=0, parent=parent(), spec=SPEC, config=config, model="openai/b"
        )
        result = task_fns.run_task(task, task_fns.WorkerContext("t"))
        assert a.chat_requests() == [] and b.chat_requests()
        assert {r.body["model"] for r in b.chat_requests()} == {"b"}
    assert result.model == "openai/b" and result.status == "no_proposal"
    assert {e.call.model for e in result.exchanges} == {"openai/b"}


# --- options --------------------------------------------------------------------------------------------


def test_several_llm_flags_pair_with_their_api_bases_and_key_variables() -> None:
    config, _, given = parse_args(["--problem", "p", "--llm", "openai/local", "--api-base", "http://127.0.0.1:8000/v1",
                                   "--llm", "anthropic/claude-sonnet-4-5", "--api-base", "",
                                   "--api-key-env", "", "--api-key-env", "MY_KEY", "--samples", "4"])  # fmt: skip
    assert config.llm == "openai/local" and config.samples == 4 and "models" in given
    assert config.endpoints() == [
        ModelEndpoint(model="openai/local", api_base="http://127.0.0.1:8000/v1"),
        ModelEndpoint(model="anthropic/claude-sonnet-4-5", api_key_env="MY_KEY"),
    ]
    one, _, _ = parse_args(["--problem", "p", "--llm", "openai/x", "--api-base", "http://h/v1"])
    assert (one.llm, one.api_base, one.models) == ("openai/x", "http://h/v1", [])  # one model: as before


def test_a_config_file_lists_several_models(tmp_path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(
        'llm = ["openai/a", "openai/b"]\napi_base = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]\n'
    )
    config, _, _ = parse_args(["--problem", "p", "--config", str(path)])
    assert [(e.model, e.api_base) for e in config.endpoints()] == [("openai/a", "http://127.0.0.1:1/v1"),
                                                                   ("openai/b", "http://127.0.0.1:2/v1")]  # fmt: skip
    saved = tmp_path / "saved.json"  # the saved form, models as tables, reads back too
    saved.write_text(json.dumps({"models": [e.model_dump() for e in config.endpoints()]}))
    again, _, _ = parse_args(["--problem", "p", "--config", str(saved)])
    assert again.endpoints() == config.endpoints() and again.llm == "openai/a"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--llm", "a", "--llm", "b", "--api-base", "1", "--api-base", "2", "--api-base", "3"],
         "error: --api-base is given 3 times for 2 models"),
        (["--llm", "openai/a", "--llm", "openai/a"], "error: --llm names a model twice"),
        (["--api-base", "1", "--api-base", "2"], "error: --api-base is given 2 times but --llm names no model"),
        (["--llm", "a", "--samples", "0"], "error: bad options"),
    ],
)  # fmt: skip
def test_options_that_do_not_fit_together_are_one_error_line(argv, said, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        parse_args(["--problem", "p", *argv])
    assert e.value.code == 2 and capsys.readouterr().err.startswith(said)


def test_a_resumed_run_takes_its_models_new_addresses_but_not_other_models() -> None:
    saved, _, _ = parse_args(
        ["--problem", "p", "--llm", "openai/a", "--llm", "openai/b", "--api-base", "http://old/v1"]
    )
    moved, _, given = parse_args(["--problem", "p", "--llm", "openai/a", "--llm", "openai/b", "--api-base",
                                  "http://new-a/v1", "--api-base", "http://new-b/v1"])  # fmt: skip
    config, kept = resumed_config(saved, moved, given)
    assert [e.api_base for e in config.endpoints()] == ["http://new-a/v1", "http://new-b/v1"] and kept == []
    other, _, given = parse_args(["--problem", "p", "--llm", "openai/a", "--llm", "openai/c"])
    config, kept = resumed_config(saved, other, given)
    assert [e.model for e in config.endpoints()] == ["openai/a", "openai/b"] and kept == ["models"]


# --- the console and the report -------------------------------------------------------------------------

STATS = [
    ModelStats(model="openai/good", tasks=5, replies=5, kernels=6, verified=6, entered_beam=3, best_id="r3-t0",
               best_ms=2.5, tokens=6500, cost_usd=0.0123, share=0.8),
    ModelStats(model="openai/garbage", tasks=3, replies=6, failed=3, tokens=900, share=0.0,
               out_reason="3 tasks in a row got no usable kernel of it, the last r2-t1: ..."),
]  # fmt: skip


def test_the_final_table_has_a_row_per_model_and_a_model_out_is_a_warning() -> None:
    screen = io.StringIO()
    display = Display(False, lambda event: None, Console(file=screen, width=200))
    display.event(
        "model_out", model="openai/garbage", task="r2-t1", reason="3 tasks in a row", left=["openai/good"]
    )
    summary = _summary(STATS)
    display.finish(summary)
    text = screen.getvalue()
    assert (
        "warning: model openai/garbage taken out of rotation at r2-t1 (3 tasks in a row); in rotation: openai/good"
        in text
    )
    assert "per model:" in text
    good_row = next(line for line in text.splitlines() if "openai/good" in line and "r3-t0" in line)
    assert [c.strip() for c in good_row.split("│")[2:9]] == ["80 %", "5", "5", "6", "6", "3", "0"], good_row
    assert "out: 3 tasks in a row" in text
    one = io.StringIO()
    Display(False, lambda event: None, Console(file=one, width=200)).finish(_summary([]))
    assert "per model" not in one.getvalue()  # one model: the console reads as before


def test_the_report_has_a_models_section(tmp_path) -> None:
    from beamsearch.report import write_report

    (tmp_path / "summary.json").write_text(_summary(STATS).model_dump_json())
    text = write_report(tmp_path, index=False).read_text()
    assert (
        "### Models" in text and "| openai/good | 80 % | 5 | 5 | 6 | 6 | 3 | 0 | r3-t0 (2.500 ms) |" in text
    )
    assert "LLMs `openai/good`, `openai/garbage`" in text


def _summary(models: list[ModelStats]) -> Summary:
    config = SearchConfig(problem="p", llm="openai/good",
                          models=[ModelEndpoint(model=s.model) for s in models] if models else [])  # fmt: skip
    return Summary(problem="p", config=config, spec=SPEC, versions={}, gpu_name="cpu", baselines=[], input_ms=4.8,
                   rounds=[], best_id="r3-t0", best_ms=2.5, best_round=3, speedup_vs_input=1.92, speedup_vs_eager=None,
                   speedup_vs_compile=None, pct_of_floor=None, candidates=9, candidates_ok=6, tokens=7400,
                   cost_usd=0.0123, wall_s=60.0, gpu_measure_s=0.0, models=models)  # fmt: skip


# --- rounds of real tasks -------------------------------------------------------------------------------


def good_kernels() -> Respond:
    rows = itertools.cycle([8, 16, 2, 32, 1, 64, 128, 256, 512])  # a server never runs out of replies

    def choose(prompt: str) -> Reply:
        if "what limits its speed" in prompt:
            return Reply(DIAGNOSIS)
        if "Look back at it" in prompt:
            return Reply(json.dumps({"expected": "e", "observed": "o", "lesson": "L"}))
        return Reply(fenced(variant(next(rows))))

    return Respond(choose)


@pytest.mark.slow
def test_rounds_of_real_tasks_move_the_shares_to_the_good_model_and_survive_a_killed_server(tmp_path) -> None:
    """Three servers (good kernels, prose, too slow for the request timeout), rounds of real tasks (the
    interpreter verifies the kernels) assigned and watched by the rotation as the driver does: the prose
    model is taken out after OUT_AFTER tasks in a row, the slow one's server is stopped and it is taken out
    at once; the good one's share grows; the saved state brings the shares back."""
    slow_reply = Respond(lambda p: Reply("OK") if "Reply with the word OK" in p else Slow(6.0, Reply("late")))
    with ScriptedLLMServer(default=good_kernels()) as good, ScriptedLLMServer(default=Respond(prose)) as garbage, \
            ScriptedLLMServer(default=slow_reply) as slow:  # fmt: skip
        config = several(
            {"good": good, "garbage": garbage, "slow": slow}, task_timeout_s=60.0, refine_tries=0
        )
        rotation = ModelRotation(ModelsState(), config)
        events: list[dict] = []
        beam = [parent()]
        shares_after: list[dict[str, float]] = []
        for round_ in (1, 2, 3):
            if round_ == 2:
                slow.stop()  # its next task gets no reply at all, and the one-line check fails too
            results = []
            for i in range(3):
                t = Task(
                    id=f"r{round_}-t{i}", round=round_, direction=i, parent=beam[0], spec=SPEC, config=config
                )
                t = rotation.assign(t)
                r = task_fns.run_task(t, task_fns.WorkerContext("t"))
                assert rotation.watch(r, config, lambda kind, **d: events.append({"event": kind, **d})) == ""
                results.append(r)
            ok = sorted((r for r in results if r.ranked_ms is not None), key=lambda r: r.ranked_ms)
            kept = [BeamEntry(id=r.task_id, kernel=r.kernel, ranked_ms=r.ranked_ms, round=round_) for r in ok]
            beam = sorted(beam + kept, key=lambda e: e.ranked_ms)[:1]
            rotation.end_round(round_, results, beam)
            shares_after.append({s.model: s.share for s in rotation.table()})
    stats = {s.model: s for s in rotation.table()}
    out = {e["model"]: e["reason"] for e in events if e["event"] == "model_out"}
    assert "unreachable" in out["openai/slow"] and out["openai/garbage"].startswith(
        f"{OUT_AFTER} tasks in a row"
    )
    assert stats["openai/good"].verified == stats["openai/good"].kernels == stats["openai/good"].tasks >= 3
    assert stats["openai/good"].share == pytest.approx(1.0) and shares_after[0][
        "openai/good"
    ] == pytest.approx(1 / 3)
    assert stats["openai/garbage"].failed == stats["openai/garbage"].tasks == OUT_AFTER
    assert stats["openai/good"].best_id and stats["openai/good"].tokens > 0
    saved = BeamState(config=config, problem="p", spec=SPEC, models=rotation.state())
    again = ModelRotation(BeamState.model_validate_json(saved.model_dump_json()).models, config)
    assert again.table() == rotation.table() and again.active == ["openai/good"]


@pytest.mark.slow
def test_every_model_must_answer_the_preflight_before_any_work(tmp_path) -> None:
    """A run of several models whose one server is down stops before any work, naming that model (exit 2)."""
    from tests.test_search import START, run_cli

    out = tmp_path / "run"
    with ScriptedLLMServer(default=Respond(lambda p: Reply("OK"))) as good:
        down = ScriptedLLMServer().start()
        down.stop()
        done = run_cli("--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--llm", "openai/good",
                       "--api-base", good.api_base, "--llm", "openai/gone", "--api-base", down.api_base,
                       "--llm-retries", "0", "--quiet", timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: LLM 'openai/gone' at ") and "unreachable" in last, done.stderr
    assert not (out / "state.json").exists()


@pytest.mark.slow
def test_a_run_of_three_models_loses_one_server_goes_on_and_resumes_with_its_shares(tmp_path) -> None:
    """The whole path through the driver (issue 49's evidence): three servers under three model names, the
    slow one's server stopped once round 1 ends; the run goes on with the others, takes the slow one out with
    its reason, gives the good one the largest share, and a resume keeps the shares and counts."""
    import subprocess
    import sys
    import threading

    from tests.test_search import ROOT, START, _env

    slow_reply = Respond(lambda p: Reply("OK") if "Reply with the word OK" in p else Slow(6.0, Reply("late")))
    out = tmp_path / "run"
    with ScriptedLLMServer(default=good_kernels()) as good, ScriptedLLMServer(default=Respond(prose)) as garbage, \
            ScriptedLLMServer(default=slow_reply) as slow:  # fmt: skip
        models = ["--llm", "openai/good", "--api-base", good.api_base, "--llm", "openai/garbage", "--api-base",
                  garbage.api_base, "--llm", "openai/slow", "--api-base", slow.api_base]  # fmt: skip
        args = ["--problem", PROBLEM, "--kernel", str(START), "--out", str(out), "--rounds", "4", "--workers", "2",
                "--beam-width", "1", "--directions", "3", "--candidates-per-round", "3", "--llm-timeout", "4",
                "--llm-retries", "0", "--task-timeout", "120", "--quiet", *models]  # fmt: skip
        proc = subprocess.Popen([sys.executable, "-m", "beamsearch.run", *args], cwd=ROOT, env=_env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        events = []
        for line in proc.stdout:
            event = json.loads(line) if line.startswith("{") else {}
            events.append(event)
            if event.get("event") == "round_end" and event["round"] == 1:
                threading.Thread(target=slow.stop, daemon=True).start()
        assert proc.wait(timeout=600) == 0, proc.stderr.read()[-3000:]
        first = Summary.model_validate_json((out / "summary.json").read_text())
        stats = {s.model: s for s in first.models}
        assert "unreachable" in stats["openai/slow"].out_reason
        assert [e["model"] for e in events if e.get("event") == "model_out"][0] == "openai/slow"
        assert stats["openai/good"].share > max(stats["openai/garbage"].share, stats["openai/slow"].share)
        assert stats["openai/good"].verified >= 2 and stats["openai/garbage"].verified == 0
        model_tasks = sum(s.tasks for s in first.models)
        assert model_tasks >= 4 * 3 - 3  # each round's model tasks went to some model (one round's may be cut)
        saved = BeamState.model_validate_json((out / "state.json").read_text()).models

        resumed = subprocess.run([sys.executable, "-m", "beamsearch.run", "--resume", "--out", str(out), "--rounds",
                                  "5", "--quiet", *models], cwd=ROOT, env=_env(), text=True, capture_output=True,
                                 timeout=600)  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = {s.model: s for s in Summary.model_validate_json((out / "summary.json").read_text()).models}
    assert again["openai/slow"].out_reason == stats["openai/slow"].out_reason  # still out: not asked again
    assert again["openai/good"].tasks > stats["openai/good"].tasks  # round 5 went on from the saved counts
    assert all(again[s.model].tasks >= s.tasks and again[s.model].verified >= s.verified for s in saved.stats)


def test_a_bare_api_base_on_resuming_a_run_of_several_models_is_refused(tmp_path, capsys) -> None:
    """Which model would a lone --api-base move? The run says to give its --llm list again, each with its own."""
    from beamsearch.run import main
    from beamsearch.trace import TraceWriter

    saved, _, _ = parse_args(["--problem", PROBLEM, "--llm", "openai/a", "--llm", "openai/b", "--api-base", "http://old/v1"])
    TraceWriter(tmp_path).save_state(BeamState(config=saved, problem="scale_rows_problem", spec=SPEC))
    with pytest.raises(SystemExit) as stopped:
        main(["--resume", "--out", str(tmp_path), "--api-base", "http://new/v1"])
    assert stopped.value.code == 2
    said = capsys.readouterr().err.strip().splitlines()[-1]
    assert said.startswith("error: --api-base: this run asks 2 models; give its --llm list again"), said
