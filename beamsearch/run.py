"""``python -m beamsearch.run``: the beam search, on a local Ray or an existing cluster.

    python -m beamsearch.run --problem 43_Max_Pooling_3D --workers 4 --rounds 8

With no model configured the offline optimiser searches the knob space of each beam kernel, as many
candidates a round as the workers can take (``--candidates-per-round``), within ``--budget-candidates``
and ``--budget-minutes``; ``--sweep`` tries every point of the starting kernel's space instead.
``--llm MODEL`` asks a model through litellm; ``--replay DIR`` re-proposes a recorded run's kernels. Each
run writes to a new folder ``runs/<problem>/<UTC time>/`` (or ``--out DIR``); ``python -m
beamsearch.publish`` copies a finished run into ``artifacts/<problem>/``. With no GPU the workers run Triton's interpreter
on the problem's small shapes. Ctrl-C (or a killed driver) leaves a consistent trace: ``--resume``
continues after the last finished round, reusing the finished candidates of the round cut short.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import traceback
from importlib import import_module
from pathlib import Path

from pydantic import ValidationError

from beamsearch.cli_common import comma_list, fail
from beamsearch.display import Display
from beamsearch.driver import Driver, SearchError
from beamsearch.model_watch import ModelLost
from beamsearch.records.config import SWEEP_ROUNDS, SearchConfig, load_config_file, models_from
from beamsearch.records.problems import ProblemNotFound, resolve_problem
from beamsearch.records.schema import Kernel, RunSpec
from beamsearch.records.state import BeamState
from beamsearch.run_folders import NoRunFound, latest_run_dir, new_run_dir
from beamsearch.trace import TraceWriteError, TraceWriter
from workers.harness.timing import BUILTIN_TARGETS

CPU_WORKERS = 2
# A GPU's share for each of four workers: their compiles and checks overlap while one times; more measured
# no faster (docs/scaling.md).
WORKERS_PER_GPU = 4
# Options a resumed run may change; the others are the run's own. More rounds or budget, the display, and how
# to reach the model (a run stopped because its model went away resumes with the model's new address).
RESUME_MAY_CHANGE = {"rounds", "quiet", "budget_minutes", "budget_candidates", "api_base", "api_key_env",
                     "llm_timeout_s", "llm_retries", "llm_concurrency", "on_model_lost"}  # fmt: skip
PRIVATE_RAY_PREFIX = "bsray-"  # /tmp/bsray-<driver pid>-*: a private Ray's folder


def parse_args(argv: list[str] | None) -> tuple[SearchConfig, bool, set[str]]:
    p = argparse.ArgumentParser(prog="python -m beamsearch.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    fields = SearchConfig.model_fields
    p.add_argument("--problem", help=fields["problem"].description)
    p.add_argument("--config", help="a JSON or TOML file of options (same names, with underscores)")
    p.add_argument("--resume", action="store_true", help="continue a run after its last finished round: the one in "
                   "--out, else the problem's latest under runs/")  # fmt: skip
    for name in ("kernel", "out", "replay", "device", "address", "compiler_recording", "compiler_portfolio"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, default=None, help=fields[name].description)
    # several models: --llm once per model, --api-base / --api-key-env once for all or once per --llm
    p.add_argument("--llm", dest="llm", action="append", default=None, help=fields["llm"].description + "; give it "
                   "again for each further model")  # fmt: skip
    p.add_argument("--api-base", dest="api_base", action="append", default=None, help=fields["api_base"].description
                   + "; with several --llm: once for all, or once per --llm in the same order ('' for the default)")  # fmt: skip
    for name in ("rounds", "workers", "beam_width", "directions", "candidates_per_round", "budget_candidates", "seed",
                 "refine_tries", "verify_per_gpu", "samples"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, default=None, help=fields[name].description)
    p.add_argument("--api-key-env", dest="api_key_env", action="append", default=None,
                   help=fields["api_key_env"].description + "; with several --llm: as --api-base")  # fmt: skip
    for flag, name, kind in (("--llm-timeout", "llm_timeout_s", float), ("--llm-retries", "llm_retries", int),
                             ("--llm-concurrency", "llm_concurrency", int), ("--temperature", "temperature", float),
                             ("--max-tokens", "max_tokens", int)):  # fmt: skip
        p.add_argument(flag, dest=name, type=kind, default=None, help=fields[name].description)
    p.add_argument("--on-model-lost", dest="on_model_lost", choices=["stop", "offline"], default=None,
                   help=fields["on_model_lost"].description)  # fmt: skip
    p.add_argument("--task-timeout", dest="task_timeout_s", type=float, default=None, help=fields["task_timeout_s"].description)
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default=None)
    p.add_argument("--atol", type=float, default=None, help=fields["atol"].description)
    p.add_argument("--rtol", type=float, default=None, help=fields["rtol"].description)
    p.add_argument("--shapes", choices=["auto", "full", "small"], default=None)
    p.add_argument("--baselines", type=comma_list(BUILTIN_TARGETS), default=None,
                   help="comma-separated: eager, compile, compile-max-autotune (empty string: none)")  # fmt: skip
    p.add_argument("--no-profile", dest="profile", action="store_false", default=None, help="skip ncu")
    p.add_argument("--screen-ratio", dest="screen_ratio", type=float, default=None, help=fields["screen_ratio"].description)
    p.add_argument("--no-screen", action="store_true", help="time every candidate in full (screen_ratio none)")
    p.add_argument("--budget-minutes", dest="budget_minutes", type=_minutes, default=None,
                   help=fields["budget_minutes"].description + " (default auto)")
    p.add_argument("--sweep", action="store_true", default=None, help=fields["sweep"].description)
    p.add_argument("--compiler-seed", dest="compiler_seed", action=argparse.BooleanOptionalAction, default=None,
                   help=fields["compiler_seed"].description)  # fmt: skip
    p.add_argument("--quiet", action="store_true", default=None, help=fields["quiet"].description)
    args = p.parse_args(argv)
    values: dict = {}
    if args.config:
        try:
            values |= load_config_file(args.config)
        except ValueError as e:
            fail(str(e))
    given = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    if args.no_screen:
        given["screen_ratio"] = None
    if args.budget_minutes == "none":
        given["budget_minutes"] = None
    if "llm" in given:  # the command line's models replace the config file's
        values.pop("models", None)
    values |= given
    try:
        several = _models_option(values)
    except ValueError as e:
        fail(str(e))
    if values.get("sweep"):  # every point: the search's default rounds would end it before its last
        values.setdefault("rounds", SWEEP_ROUNDS)
    if "problem" not in values:
        if not (args.resume and "out" in values):
            p.error("--problem is required (on the command line or in --config); --resume --out DIR needs neither")
        values["problem"] = _problem_of_run(Path(values["out"]))
    try:
        return SearchConfig(**values), args.resume, set(given) | ({"models"} if several else set())
    except ValidationError as e:
        fail(f"bad options: {e}")


def _as_list(value: object) -> list[str]:
    """An option given once (a string) or several times (a list, from the flags or the config file)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]  # type: ignore[union-attr]


def _models_option(values: dict) -> bool:
    """``llm``, ``api_base`` and ``api_key_env`` as the config takes them: a run of several models has its
    list in ``models`` and its first in ``llm`` (``models_from`` pairs them). True for several models.
    Raises ValueError on options that do not fit together."""
    if values.get("models") and not values.get("llm"):  # a config file's [[models]] tables alone
        values["llm"] = values["models"][0]["model"] if isinstance(values["models"][0], dict) else None
        return len(values["models"]) > 1
    llm, bases, keys = (_as_list(values.get(k)) for k in ("llm", "api_base", "api_key_env"))
    if not llm:
        for flag, given in (("--api-base", bases), ("--api-key-env", keys)):
            if len(given) > 1:
                raise ValueError(f"{flag} is given {len(given)} times but --llm names no model: give --llm once per "
                                 "model, each followed by its own --api-base")  # fmt: skip
        values |= {k: v[0] for k, v in (("api_base", bases), ("api_key_env", keys)) if v}
        return False
    models = models_from(llm, bases, keys)
    first = models[0]
    values |= {"llm": first.model, "api_base": first.api_base, "api_key_env": first.api_key_env}
    if len(models) > 1:
        values["models"] = [m.model_dump() for m in models]
    return len(models) > 1


def main(argv: list[str] | None = None) -> int:
    # SIGINT is how Ctrl-C, the suite and the dev-set evaluation stop a search with its trace kept. A
    # process started from a shell's background job inherits SIGINT ignored, and Python keeps it so.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config, resume, given = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        problem = resolve_problem(config.problem)
    except ProblemNotFound as e:
        fail(str(e))
    out = _given_or_latest_out(config, problem.name, resume)  # None: a new folder, made once the options pass
    kernel = None if resume else _starting_kernel(config, problem)
    previous = _previous_state(TraceWriter(out), resume, out) if out else None
    if previous is not None:
        where = sorted(f"--{k.replace('_', '-')}" for k in given & {"api_base", "api_key_env"})
        if len(previous.config.models) > 1 and where and "models" not in given:
            fail(f"{' and '.join(where)}: this run asks {len(previous.config.models)} models; give its --llm list "
                 "again, each with its own --api-base (and --api-key-env), in the run's order")  # fmt: skip
        config, kept = resumed_config(previous.config, config, given)
        if kept:
            print(f"--resume keeps the run's own {', '.join(kept)}: start a new run to change "
                  f"{'it' if len(kept) == 1 else 'them'}", file=sys.stderr)  # fmt: skip
    if config.sweep and config.proposing:
        fail("--sweep tries the offline optimiser's knob space: it takes no --llm or --replay")
    for flag, folder in (("--replay", config.replay), ("--compiler-recording", config.compiler_recording)):
        if folder and not Path(folder).is_dir():
            fail(f"{flag} {folder}: not a folder")
    if config.compiler_recording and config.compiler_seed is False:
        fail("--compiler-recording is where the compiler seed comes from: it cannot go with --no-compiler-seed")
    no_start = (f"problem {problem.name} has no input_kernel.py next to it: give a starting kernel with --kernel, "
                "or start from torch.compile's own kernels with --compiler-seed")  # fmt: skip
    if previous is None and kernel is None and not config.wants_compiler_seed("cuda"):
        fail(no_start)  # no device would give this run a seed to start from
    _require_packages()
    if config.llm:
        previous = _preflight(config, previous)
    trace = TraceWriter(out or new_run_dir(problem.name))
    _say(f"run folder: {trace.out}", config.quiet)
    if previous is not None:
        trace.remove_partial_writes()

    import ray

    ray_tmp = _start_ray(config.address)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        device = _device(config.device, gpus)
        spec = previous.spec if previous else run_spec(config, problem.problem_path, device)
        if previous is None and kernel is None and not config.wants_compiler_seed(device):
            if out is None:
                with contextlib.suppress(OSError):
                    trace.out.rmdir()  # the run folder made for it, still empty
            fail(no_start)
        workers = config.workers or (WORKERS_PER_GPU * gpus if device == "cuda" else CPU_WORKERS)
        display = Display(config.quiet, trace.log_event)
        return _search(config, previous, kernel, spec, workers, gpus if device == "cuda" else 0, trace, display, problem.name)
    finally:
        ray.shutdown()
        if ray_tmp:
            shutil.rmtree(ray_tmp, ignore_errors=True)


def _search(config: SearchConfig, previous: BeamState | None, kernel: Kernel | None, spec: RunSpec, workers: int,
            gpus: int, trace: TraceWriter, display: Display, problem: str) -> int:  # fmt: skip
    from beamsearch.pool import WorkerPool

    service = _start_llm_service(config) if config.llm else None  # held: Ray ends an actor nobody holds
    pool = WorkerPool.start(workers, gpus)
    if config.profile and gpus:
        pool.start_profiling()
    state = previous or BeamState(config=config, problem=problem, spec=spec)
    driver = Driver(state, pool, trace, display, problem, versions=pool.call("versions", spec.device))
    try:
        if previous is None:
            driver.measure_start(kernel)  # also settles what the start measures into the config (the GPU's places)
        else:
            if previous.round:
                display.event("resume", after_round=previous.round, rounds=config.rounds)
            driver.resume_with(config)
        driver.run_rounds()
        summary = driver.finish()
    except (SearchError, ModelLost) as e:
        display.close()
        fail(str(e), code=1)
    except TraceWriteError as e:
        display.close()
        fail(f"{e}. The trace up to the last finished round is intact; free space and run again with --resume", code=1)
    except KeyboardInterrupt:
        display.event("interrupted", after_round=driver.state.round)
        display.close()
        print(f"interrupted: {_where_to_go_on(trace)}", file=sys.stderr)
        return 130
    except Exception as e:  # a fault of ours: say so, and keep what the finished rounds found
        display.close()
        traceback.print_exc()
        fail(f"the search stopped on an unexpected error ({type(e).__name__}: {e}); "
             f"please report it with the traceback above. {_where_to_go_on(trace)}", code=1)  # fmt: skip
    finally:
        pool.shutdown()
        del service
    from beamsearch.report import write_report

    try:
        write_report(trace.out)
    except OSError as e:  # the search's own results are written; a report can be made later
        print(f"warning: no report ({e}); make it with: python -m beamsearch.report {trace.out}", file=sys.stderr)
    _say(results_line(trace.out, spec), config.quiet)
    return 0 if summary.best_id else 1


def results_line(out: Path, spec: RunSpec) -> str:
    """Where the results are; publishing into artifacts/ is suggested only for what it holds: GPU runs at full shapes."""
    if spec.device.startswith("cuda") and spec.shapes == "full":
        return f"results in {out}; publish them with: python -m beamsearch.publish {out}"
    why = "Triton's interpreter on the CPU" if not spec.device.startswith("cuda") else f"{spec.shapes} shapes"
    return f"results in {out} (its report: {out / 'README.md'}); a run of {why}, not one to publish into artifacts/"


def _say(line: str, quiet: bool) -> None:
    """A line for the person running the search: on stdout, or on stderr in --quiet, whose stdout is JSON lines."""
    print(line, file=sys.stderr if quiet else sys.stdout, flush=True)


def _where_to_go_on(trace: TraceWriter) -> str:
    """How to carry on from a run that stopped: resume its saved rounds, or, before any was saved, start again."""
    try:
        saved = trace.load_state()
    except (OSError, ValueError):  # a state.json not written whole: as if none were
        saved = None
    if saved is None:
        return f"nothing was saved in {trace.out} yet: start the run again"
    return f"the trace in {trace.out} is consistent up to round {saved.round}; continue with --resume --out {trace.out}"


# Packages a run imports only when it reaches them (the tuner's TPE in its first model-based round, the
# report's plot at the end): one missing, or missing a dependency of its own, is named before any work.
LATE_IMPORTS = ("optuna", "matplotlib.figure")


def _require_packages() -> None:
    for name in LATE_IMPORTS:
        try:
            import_module(name)
        except ImportError as e:
            fail(f"a run needs {name.split('.')[0]}, which cannot be imported ({e}): install the project with "
                 "pip install -e . (on a machine with no package index, carry its wheels and its dependencies)")  # fmt: skip


def _minutes(text: str) -> float | str:
    """``--budget-minutes``: a number of minutes, ``auto``, or ``none`` for no limit."""
    if text.lower() in ("none", "auto"):
        return text.lower()
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected minutes, auto or none, got {text!r}") from None


def _preflight(config: SearchConfig, previous: BeamState | None) -> BeamState | None:
    """One tiny request to each model before any work: a wrong model name, key or address fails here,
    clearly. A resumed run of several whose every model was out of rotation (it stopped for that) asks
    each again, and those that answer rejoin; a model out while others went on stays out."""
    from beamsearch.model_watch import preflight
    from workers.proposers.llm_client import LLMUnavailable

    stats = previous.models.stats if previous is not None else []
    if stats and all(s.out_reason for s in stats):
        back = []
        for s in stats:
            try:
                preflight(config, s.model)
                back.append(s.model_copy(update={"out_reason": ""}))
            except LLMUnavailable:
                back.append(s)
        previous = previous.model_copy(update={"models": previous.models.model_copy(update={"stats": back})})
        stats = back
    out = {s.model for s in stats if s.out_reason}
    for endpoint in config.endpoints():
        if endpoint.model in out:
            continue
        try:
            preflight(config, endpoint.model)
        except LLMUnavailable as e:
            fail(str(e))
    return previous


def _start_llm_service(config: SearchConfig) -> object:
    """The run's one way to its models (workers/proposers/llm_service.py), holding the keys read here."""
    from workers.actor.task import llm_config
    from workers.proposers.llm_service import start_llm_service

    endpoints = config.endpoints()
    keys = [os.environ.get(e.api_key_env) if e.api_key_env else None for e in endpoints]
    if len(endpoints) == 1:  # one model: the service as it always was
        return start_llm_service(llm_config(config), keys[0])
    return start_llm_service([llm_config(config, e.model) for e in endpoints], keys)


def _given_or_latest_out(config: SearchConfig, problem: str, resume: bool) -> Path | None:
    """--out as given; with --resume alone, the problem's latest run under runs/; else None (a new run)."""
    if config.out:
        return Path(config.out).expanduser().resolve()
    if not resume:
        return None
    try:
        return latest_run_dir(problem)
    except NoRunFound as e:
        fail(f"--resume: {e}")


def _problem_of_run(out: Path) -> str:
    state = TraceWriter(out.expanduser()).load_state() if (out.expanduser() / "state.json").is_file() else None
    if state is None:
        fail(f"--resume: no run to resume in {out} (no state.json)")
    return state.config.problem


def resumed_config(saved: SearchConfig, given_config: SearchConfig, given: set[str]) -> tuple[SearchConfig, list[str]]:
    """A resumed run's options: its own, but those RESUME_MAY_CHANGE names taken from the command line; and
    the options given otherwise than the run has them, which it keeps (named so, not dropped unsaid)."""
    config = saved.model_copy(update={k: getattr(given_config, k) for k in given & RESUME_MAY_CHANGE})
    names = [m.model for m in given_config.models]
    if saved.models and "models" in given and names == [m.model for m in saved.models]:
        # the same models again, with where each is now (a model that went away resumes at its new address)
        where = {"models": given_config.models, "api_base": given_config.api_base, "api_key_env": given_config.api_key_env}
        config, given = config.model_copy(update=where), given - {"models"}
    kept = sorted(k for k in given - RESUME_MAY_CHANGE - {"problem", "out"}
                  if getattr(given_config, k) != getattr(saved, k))  # fmt: skip
    return config, kept


def run_spec(config: SearchConfig, problem_path: str, device: str) -> RunSpec:
    """A new run's spec: its problem, device, dtype, shapes (auto: full on a GPU) and values rule."""
    shapes = config.shapes if config.shapes != "auto" else ("full" if device == "cuda" else "small")
    return RunSpec(problem_path=problem_path, device=device, dtype=config.dtype, shapes=shapes,
                   tolerance=config.tolerance())  # fmt: skip


def _previous_state(trace: TraceWriter, resume: bool, out: Path) -> BeamState | None:
    state = trace.load_state() if (out / "state.json").is_file() else None
    if resume and state is None:
        fail(f"--resume: no run to resume in {out} (no state.json)")
    if not resume and state is not None:
        fail(f"{out} already holds a run (state.json): continue it with --resume, or choose another --out")
    return state


def _starting_kernel(config: SearchConfig, problem) -> Kernel | None:
    """The kernel a run starts from; None where the compiler seed is to be the start (no input kernel)."""
    path = config.kernel or problem.input_kernel_path
    if path is None:
        return None  # the compiler seed is the start, where the run wants one (checked once the device is known)
    try:
        return Kernel(source=Path(path).expanduser().read_text(), origin="input", note=f"starting kernel {path}")
    except OSError as e:
        fail(f"--kernel {path}: {e.strerror or e}")


def _device(requested: str, gpus: int) -> str:
    if requested == "auto":
        return "cuda" if gpus else "cpu"
    if requested.startswith("cuda") and not gpus:
        fail(f"--device {requested}: the Ray cluster has no GPU (use --device cpu for Triton's interpreter)")
    if requested not in ("cpu", "cuda"):
        fail(f"--device {requested}: use cpu, cuda or auto (workers get whole GPUs or shares from Ray)")
    return requested


def _start_ray(address: str | None) -> str | None:
    """Join ``address`` (or RAY_ADDRESS); else start a private local Ray. Returns the temp folder to remove."""
    import ray

    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        _check_reachable(address)
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            fail(f"cannot reach the Ray cluster at {address}: {e}")
        return None
    # A private Ray: its files in a temp folder removed at exit (not /tmp/ray), bound to 127.0.0.1, so
    # no auth token needs writing to ~/.ray (Ray's default for new local clusters).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # In /tmp, not TMPDIR: Ray's socket paths must stay short. Named by this process, so whoever kills it
    # (its folder is removed only at a clean exit) can find and remove the folder.
    tmp = tempfile.mkdtemp(prefix=f"{PRIVATE_RAY_PREFIX}{os.getpid()}-", dir="/tmp")
    ray.init(_temp_dir=tmp, _node_ip_address="127.0.0.1", include_dashboard=False, logging_level=logging.WARNING,
             log_to_driver=False, configure_logging=True)  # fmt: skip
    return tmp


def _check_reachable(address: str) -> None:
    """Fail fast on an address nothing listens on (ray.init would retry for minutes)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not port.isdigit():
        fail(f"Ray address {address!r}: expected host:port, ray://host:port or auto")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except OSError as e:
        fail(f"cannot reach the Ray cluster at {address}: {e.strerror or e} (is `ray start --head` running there?)")


if __name__ == "__main__":
    raise SystemExit(main())
