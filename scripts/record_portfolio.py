"""Record the compiler seed's portfolio for problems, and say which variants are distinct and which seeds extract.

    python scripts/record_portfolio.py --problems 24 36 tests/data/cross_entropy_problem.py --out DIR
        [--portfolio FILE] [--variants default multi_kernel ...] [--cpu] [--jobs 8]
        [--timeout-s 300] [--deadline-s 450] [--tar FILE]

Each problem under each variant of the portfolio (workers/harness/inductor_portfolio.toml unless
--portfolio) is recorded by workers/harness/record_inductor.py (a GPU; --cpu: record_inductor_cpu.py at
the small shapes), one process per recording with a fresh Inductor cache, --jobs at once. A recording
has --timeout-s; none starts after --deadline-s and any still running then is stopped, so the whole
takes at most about --deadline-s. Recordings go to DIR/<problem>/<variant>/ (output_code.py,
chosen_configs.json, graph_args.json, meta.json, multi_kernel_choices.json where Inductor made a
multi-kernel; best_configs.json is dropped: the seed prefers chosen_configs.json), the folder form
``--compiler-recording`` reads. A recording that failed leaves DIR/<problem>/<variant>/error.txt.

Then per problem, per variant: recorded or why not, distinct or the same code as which earlier variant
(workers/proposers/seed_portfolio.py), and whether its seed extracts (or why not). The table is printed
and written to DIR/portfolio.txt and DIR/portfolio.json; --tar packs DIR into one .tar.gz.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beamsearch.records.problems import resolve_problem  # noqa: E402
from workers.harness.inductor_portfolio import PortfolioVariant, load_portfolio  # noqa: E402
from workers.proposers.compile_seed import seed_from_recording  # noqa: E402
from workers.proposers.seed_portfolio import duplicates  # noqa: E402

KEPT = ("output_code.py", "chosen_configs.json", "graph_args.json", "meta.json", "multi_kernel_choices.json")


@dataclass
class Job:
    problem: str  # as given
    name: str  # the problem's folder name
    variant: PortfolioVariant
    dest: Path
    process: subprocess.Popen | None = None
    scratch: Path | None = None
    started: float = 0.0
    outcome: str = "not started"  # recorded, failed (exit N), timed out, not started (deadline)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", nargs="+", required=True, help="bundled names or prefixes, or problem.py paths")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--portfolio", help="a portfolio TOML file; default: the bundled one")
    parser.add_argument("--variants", nargs="+", help="only these variants of the portfolio")
    parser.add_argument("--cpu", action="store_true", help="record_inductor_cpu.py at the small shapes (no GPU)")
    parser.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    parser.add_argument("--jobs", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)))
    parser.add_argument("--timeout-s", type=float, default=300.0, help="per recording")
    parser.add_argument("--deadline-s", type=float, default=450.0, help="no recording starts or runs past this")
    parser.add_argument("--tar", type=Path, help="also pack DIR into this .tar.gz")
    args = parser.parse_args()

    variants = load_portfolio(args.portfolio)
    if args.variants:
        variants = [v for v in variants if v.name in args.variants]
    # variant by variant, so a deadline cuts the portfolio's last variants, not its last problems
    jobs = [Job(p, resolve_problem(p).name, v, args.out / resolve_problem(p).name / v.name)
            for v in variants for p in args.problems]  # fmt: skip
    start = time.monotonic()
    run_all(jobs, args, start)
    rows = summarise(jobs)
    table = "\n".join(rows["lines"])
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "portfolio.txt").write_text(table + "\n")
    (args.out / "portfolio.json").write_text(json.dumps(rows["records"], indent=1) + "\n")
    print(f"{len(jobs)} recordings in {time.monotonic() - start:.0f} s")
    if args.tar:
        with tarfile.open(args.tar, "w:gz") as tar:
            tar.add(args.out, arcname=args.out.name)
        print(f"packed {args.out} into {args.tar}")


def run_all(jobs: list[Job], args: argparse.Namespace, start: float) -> None:
    """Every job, ``args.jobs`` at once, each in its own process with a fresh Inductor cache."""
    module = "workers.harness.record_inductor_cpu" if args.cpu else "workers.harness.record_inductor"
    waiting, running = list(jobs), []
    while waiting or running:
        now = time.monotonic()
        while waiting and len(running) < args.jobs and now - start < args.deadline_s:
            job = waiting.pop(0)
            job.scratch = Path(tempfile.mkdtemp(prefix="portfolio-"))
            command = [sys.executable, "-m", module, "--problem", job.problem, "--out", str(job.scratch),
                       "--dtype", args.dtype, *job.variant.option_args()]  # fmt: skip
            log = (job.scratch / "log.txt").open("w")
            job.process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)  # fmt: skip
            job.started = now
            running.append(job)
        if now - start >= args.deadline_s:
            waiting.clear()  # left "not started"
        for job in list(running):
            assert job.process is not None and job.scratch is not None
            late = now - job.started > args.timeout_s or now - start > args.deadline_s
            if job.process.poll() is None and not late:
                continue
            if job.process.poll() is None:
                os.killpg(job.process.pid, 9)
                job.process.wait()
                job.outcome = f"timed out after {now - job.started:.0f} s"
            else:
                job.outcome = "recorded" if job.process.returncode == 0 else f"failed (exit {job.process.returncode})"
            running.remove(job)
            keep(job)
            print(f"{job.name} {job.variant.name}: {job.outcome} ({now - job.started:.0f} s)", flush=True)
        time.sleep(0.5)


def keep(job: Job) -> None:
    """The recording's small files into its folder (or the log's tail as error.txt), the scratch removed."""
    assert job.scratch is not None
    job.dest.mkdir(parents=True, exist_ok=True)
    made = job.scratch / job.name
    if job.outcome == "recorded" and (made / "output_code.py").is_file():
        for name in KEPT:
            if (made / name).is_file():
                shutil.copy(made / name, job.dest / name)
    else:
        log = (job.scratch / "log.txt").read_text(errors="replace").strip().splitlines()
        (job.dest / "error.txt").write_text(f"{job.outcome}\n" + "\n".join(log[-40:]) + "\n")
    shutil.rmtree(job.scratch, ignore_errors=True)


def summarise(jobs: list[Job]) -> dict[str, list]:
    lines, records = [], []
    for name in dict.fromkeys(j.name for j in jobs):
        mine = [j for j in jobs if j.name == name]
        seeds = {j.variant.name: seed_from_recording(j.dest) for j in mine if j.outcome == "recorded"}
        same = duplicates((v, s.code_key or v) for v, s in seeds.items())
        lines.append(f"== {name}")
        for job in mine:
            v = job.variant.name
            seed = seeds.get(v)
            skipped = {}
            if seed is not None:
                skipped = json.loads((job.dest / "meta.json").read_text()).get("skipped_options") or {}
            code = "-" if seed is None else "distinct" if same[v] is None else f"same code as {same[v]}"
            extracted = "-" if seed is None else "seed extracted" if seed.available else f"no seed: {seed.unavailable}"
            picked = [n for n in (seed.notes if seed else []) if "multi-kernel" in n]
            lines.append(f"  {v:26} {job.outcome:22} {code:34} {extracted[:160]}"
                         + (f" [skipped: {', '.join(skipped)}]" if skipped else "")
                         + (f" [{'; '.join(picked)}]" if picked else ""))  # fmt: skip
            records.append({"problem": name, "variant": v, "options": job.variant.options, "outcome": job.outcome,
                            "same_code_as": same.get(v), "distinct": seed is not None and same[v] is None,
                            "seed": None if seed is None else seed.available,
                            "unavailable": None if seed is None else seed.unavailable, "code_key": seed and seed.code_key,
                            "skipped_options": skipped, "notes": seed.notes if seed else []})  # fmt: skip
    return {"lines": lines, "records": records}


if __name__ == "__main__":
    main()
