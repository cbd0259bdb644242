"""The search's settings: one pydantic model, filled from defaults, then a config file, then the command line.

A config file is JSON or TOML with the same keys as the long options (``beam_width``, ``llm``, ...).
The resolved config is saved with the run (``summary.json``, ``state.json``) so a run can be repeated.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from beamsearch.records.llm import ModelEndpoint
from beamsearch.records.schema import DType, Record, ShapeSet, Tolerance, given_tolerance

OFFLINE_MINUTES = 8.0  # the offline optimiser's default time budget: a round and the final re-timing fit after it
SWEEP_ROUNDS = 1_000_000  # a sweep's rounds unless told: it ends when its space is spent


class SearchConfig(Record):
    problem: str = Field(description="bundled problem name (or unique prefix) or a path to problem.py")
    kernel: str | None = Field(None, description="starting kernel; default: the problem's input_kernel.py")
    out: str | None = Field(None, description="output folder; default: a new runs/<problem>/<UTC time>/")
    rounds: int = Field(8, ge=1)
    workers: int = Field(0, ge=0, description="Ray actors; 0: four per GPU, sharing it (or 2 on the CPU)")
    beam_width: int = Field(2, ge=1, description="kernels kept between rounds; 1 is greedy search")
    directions: int = Field(2, ge=1, description="tasks per parent per round with a model or a replay (bottlenecks, or recorded "
                            "proposals); a round has beam width x directions tasks, shared out over fewer parents while "
                            "the beam is short")
    candidates_per_round: int = Field(0, ge=0, description="offline optimiser: candidates a round hands out, planned from "
                                      "the searchers of the beam's knob spaces (with a model or a replay: its tasks "
                                      "and knob variants of its kernels together); 0: 4 per worker")
    budget_candidates: int | None = Field(None, ge=1, description="the run stops after this many candidates (the last "
                                          "round is cut to fit); none: no limit but the rounds")
    budget_minutes: Annotated[float, Field(gt=0)] | Literal["auto"] | None = Field(
        "auto", description="no round starts after this many minutes of search, the rounds' own (the round under "
        "way finishes, then the final re-timing; the start's measurements, baselines and compiler seed before round 1 "
        f"are not counted, and the start says how long they took); auto: {OFFLINE_MINUTES:g} for the offline "
        "optimiser, none with a model, a replay or a sweep; none: no limit")  # fmt: skip
    sweep: bool = Field(False, description="offline optimiser: try every point of the starting kernel's knob space in "
                        "order instead of searching it (the anchor a search is measured against; scripts/sweep.py); "
                        "no round or minutes limit unless --rounds or --budget-minutes is given")
    compiler_seed: bool | None = Field(None, description="also start from torch.compile(mode='max-autotune-no-"
                                       "cudagraphs')'s own Triton kernels for the problem, made standalone with "
                                       "Inductor's chosen configs as knobs (docs/compile-seed.md); needs a GPU, or "
                                       "--compiler-recording; none: on a GPU, unless --sweep")
    compiler_recording: str | None = Field(None, description="a folder written by workers/harness/record_inductor.py to take "
                                           "Inductor's kernels from, instead of compiling the problem now (implies "
                                           "--compiler-seed)")
    compiler_portfolio: str | None = Field(None, description="a TOML file of the Inductor configurations the compiler "
                                           "seed is recorded under, one [[variant]] each (a name and a table of "
                                           "torch._inductor.config options; docs/compile-seed.md); none: the bundled "
                                           "workers/harness/inductor_portfolio.toml")
    llm: str | None = Field(None, description="litellm model string (openai/NAME for an OpenAI-compatible server, "
                            "ollama/NAME, anthropic/NAME, ...), the first when there are several (``models``); "
                            "none: the offline optimiser")
    models: list[ModelEndpoint] = Field([], description="a run of several models (--llm given more than once): "
                                        "each with its own api_base and api_key_env; their model tasks are shared "
                                        "out by what each one's candidates achieve (docs/models.md); empty: the one "
                                        "model of llm, api_base and api_key_env")
    samples: int = Field(1, ge=1, le=16, description="replies asked for each rewrite prompt (litellm's n where the "
                         "provider takes it, else that many requests); every kernel of every reply is a candidate")
    api_base: str | None = Field(None, description="the model server's address, with /v1 for OpenAI-compatible "
                                 "servers (http://127.0.0.1:8000/v1); none: the provider's default")
    api_key_env: str | None = Field(None, description="env var holding the model's API key (read by the driver, "
                                    "passed to the workers); none: litellm's usual ones, or no key for a local server")
    llm_timeout_s: float = Field(120.0, gt=0, description="seconds per LLM request attempt")
    llm_retries: int = Field(2, ge=0, description="retries of a request after a timeout, 429 or 5xx, with backoff")
    llm_concurrency: int = Field(4, ge=1, description="LLM requests in flight at once, across all workers of the run")
    temperature: float = Field(0.2, ge=0, description="the model's sampling temperature")
    max_tokens: int = Field(8192, ge=256, description="the most tokens a reply may have")
    on_model_lost: Literal["stop", "offline"] = Field("stop", description="when the model stops answering mid-run: "
                                                      "stop (exit 1, resumable with --resume) or go on with the "
                                                      "offline optimiser")
    replay: str | None = Field(None, description="a recorded trace folder to re-propose from, instead of a model")
    device: str = Field("auto", description="auto, cpu, cuda")
    shapes: Literal["auto"] | ShapeSet = "auto"
    dtype: DType = "bf16"
    atol: float | None = Field(None, ge=0, allow_inf_nan=False, description="the values checks' absolute tolerance, |out - ref| <= atol + "
                               "rtol * |ref| against the reference one precision up; none: the dtype's default (bf16 "
                               "1e-2, fp16 1e-3, fp32 1e-4)")
    rtol: float | None = Field(None, ge=0, allow_inf_nan=False, description="the values checks' relative tolerance; none: the dtype's default "
                               "(as atol)")
    seed: int = 0
    refine_tries: int = Field(2, ge=0, description="LLM repairs of a kernel that fails verification")
    task_timeout_s: float = Field(900.0, gt=0, description="a task not back by then is recorded as timed out")
    verify_per_gpu: int | None = Field(None, ge=1, description="verifications (each with its timing) at once on "
                                       "one GPU, a memory budget; none: as many as the GPU's memory holds, by the "
                                       "starting kernel's verification, at most one per worker")
    screen_ratio: float | None = Field(1.2, gt=1.0, description="a candidate whose first timed repetitions are this "
                                       "many times slower than the slowest kernel the beam would keep stops its "
                                       "timing there (it cannot enter the beam); none: time every candidate in full")
    profile: bool = Field(True, description="ncu profiles of parents and candidates (needs a GPU)")
    baselines: list[str] | None = Field(None, description="PyTorch references timed at the start; none: eager "
                                        "and compile on a GPU, eager on the CPU")
    address: str | None = Field(None, description="Ray cluster address; none: RAY_ADDRESS or a local Ray")
    quiet: bool = Field(False, description="JSON lines on stdout instead of the live display")

    def wants_compiler_seed(self, device: str) -> bool:
        """Whether the run also starts from the compiler seed: asked for, or left to the run on a GPU, where
        Inductor's compile is at hand (a sweep stays on the starting kernel's own space)."""
        if self.compiler_recording:
            return True
        if self.compiler_seed is not None:
            return self.compiler_seed
        return device.startswith("cuda") and not self.sweep

    @property
    def proposing(self) -> bool:
        """Whether a model (or a replay of one) proposes kernels; otherwise the offline optimiser does."""
        return bool(self.llm or self.replay)

    def endpoints(self) -> list[ModelEndpoint]:
        """The run's models and where each is; none without a model (or once it was lost: ``llm`` none)."""
        if not self.llm:
            return []
        return list(self.models) or [ModelEndpoint(model=self.llm, api_base=self.api_base, api_key_env=self.api_key_env)]

    def endpoint(self, model: str = "") -> ModelEndpoint:
        """Where ``model`` is; "" (or a name not among the run's): the first model. Raises without a model."""
        found = self.endpoints()
        if not found:
            raise ValueError("the run has no model")
        return next((e for e in found if e.model == model), found[0])

    def tolerance(self) -> Tolerance | None:
        """The values checks' rule where ``atol`` or ``rtol`` is given; None: the dtype's default."""
        return given_tolerance(self.dtype, self.atol, self.rtol)

    def minutes_budget(self) -> float | None:
        """``budget_minutes`` with auto resolved."""
        if self.budget_minutes != "auto":
            return self.budget_minutes
        return None if self.proposing or self.sweep else OFFLINE_MINUTES


def load_config_file(path: str | Path) -> dict:
    """The keys of a JSON or TOML config file; raises ValueError with the file's name on a bad one."""
    path = Path(path).expanduser()
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as e:
        raise ValueError(f"config file {path}: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"config file {path}: expected a table of options, got {type(data).__name__}")
    unknown = set(data) - set(SearchConfig.model_fields)
    if unknown:
        raise ValueError(f"config file {path}: unknown options {sorted(unknown)}; known: {sorted(SearchConfig.model_fields)}")
    return data


def models_from(llm: list[str], api_base: list[str], api_key_env: list[str]) -> list[ModelEndpoint]:
    """The run's models from ``--llm`` given once or more: an ``--api-base`` or ``--api-key-env`` given once
    holds for every model, given as often as ``--llm`` it pairs with each in order (an empty one: the
    provider's default). Raises ValueError saying what does not fit."""
    if len(set(llm)) != len(llm):
        raise ValueError(f"--llm names a model twice: {', '.join(llm)}")
    for flag, values in (("--api-base", api_base), ("--api-key-env", api_key_env)):
        if len(values) not in (0, 1, len(llm)):
            raise ValueError(f"{flag} is given {len(values)} times for {len(llm)} models: give it once (for every "
                             f"model) or once per --llm, in the same order (an empty string: the provider's default)")
    def nth(values: list[str], i: int) -> str | None:
        return (values[0] if len(values) == 1 else values[i] if values else "") or None

    return [ModelEndpoint(model=m, api_base=nth(api_base, i), api_key_env=nth(api_key_env, i)) for i, m in enumerate(llm)]
