"""A CPU run against a model whose replies hold several kernels, to see where each kernel goes.

    python scripts/multi_kernel_demo.py OUT_DIR

Starts the tests' scripted server on 127.0.0.1 and runs ``python -m beamsearch.run`` on the tiny
scale_rows test problem (two rounds of two tasks), with the console's output as a user sees it, then
prints what the trace keeps of it: each task's ``reply_notes``, the handed-back candidates' ``from_task``
and the summary's ``not_tried``. The model's rewrite for the first bottleneck offers seven kernels: four
new ones, one of them twice, the parent's code, and a fifth new one (over the cap of four a reply); for
the second bottleneck two: a new one, and one that differs from a kernel of the first reply only in a
comment. Later rewrites are a single new kernel.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from beamsearch.records.state import Summary, TaskResult  # noqa: E402
from scripts.llm_failures_demo import run_shown  # noqa: E402
from tests.llm_server import Reply, Respond, ScriptedLLMServer  # noqa: E402

SOURCE = (ROOT / "tests/data/search/input_kernel.py").read_text()
PROBLEM = ROOT / "tests/data/scale_rows_problem.py"


def rows(n: int) -> str:
    return SOURCE.replace("BLOCK_R = 4", f"BLOCK_R = {n}")


def warps(n: int) -> str:
    return SOURCE.replace("num_warps=4", f"num_warps={n}")


def kernels(*sources: str) -> Reply:
    return Reply(
        "A few options.\n" + "".join(f"Option {i}:\n```python\n{s}```\n" for i, s in enumerate(sources, 1))
    )


def model():
    later = itertools.count(1)
    lock = threading.Lock()

    def choose(prompt: str) -> Reply:
        if "Reply with the word OK" in prompt:
            return Reply("OK")
        if "Look back at it" in prompt:
            return Reply(
                json.dumps(
                    {"expected": "faster", "observed": "see the time", "lesson": "rows per program matter"}
                )
            )
        if "what limits its speed" in prompt:
            return Reply(json.dumps([{"category": "memory", "summary": "ROWS: too few rows per program"},
                                     {"category": "underutilized", "summary": "WARPS: one warp would do"}]))  # fmt: skip
        rewrite = prompt.split("# The bottleneck")[-1][:2000]
        if "ROWS:" in rewrite and "rows per program matter" not in prompt:
            return kernels(rows(8), rows(2), rows(8), SOURCE, rows(16), warps(2), rows(32))
        if "WARPS:" in rewrite and "rows per program matter" not in prompt:
            return kernels(
                warps(1), rows(2).replace("    out = ", "    # same code as option 2 above\n    out = ")
            )
        with lock:
            n = next(later)
        return kernels(rows(2 ** (n + 5)))

    return choose


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT_DIR", type=Path, help="folder the search writes into (OUT_DIR/run)")
    out = parser.parse_args(argv).out.resolve()
    with ScriptedLLMServer(default=Respond(model())) as server:
        cmd = [sys.executable, "-m", "beamsearch.run", "--problem", str(PROBLEM), "--kernel",
               str(ROOT / "tests/data/search/input_kernel.py"), "--out", str(out / "run"), "--rounds", "2",
               "--workers", "2", "--directions", "2", "--beam-width", "1", "--llm", "openai/test-model",
               "--api-base", server.api_base]  # fmt: skip
        returncode = run_shown(cmd)
    trace = out / "run" / "optimization_trace"
    print("\n# each candidate: where its kernel came from, and what became of its reply's other kernels")
    for path in sorted(trace.glob("round_*/candidates/*/result.json")):
        r = TaskResult.model_validate_json(path.read_text())
        came = f"from {r.from_task}'s reply" if r.from_task else "its own reply"
        print(f"{r.task_id:<10} round {r.round}  {r.status:<10} {came}: {r.kernel.note if r.kernel else ''}")
        for note in r.reply_notes:
            print(f"{'':<10} reply: {note}")
    summary = Summary.model_validate_json((out / "run" / "summary.json").read_text())
    print(f"\nsummary: {summary.candidates} candidates; not tried: {summary.not_tried or 'none'}")
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
