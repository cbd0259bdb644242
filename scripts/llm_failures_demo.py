"""A CPU run against a misbehaving OpenAI-compatible model, to see how each failure shows.

    python scripts/llm_failures_demo.py OUT_DIR

Starts the tests' scripted server on 127.0.0.1 and runs ``python -m beamsearch.run`` on the tiny
scale_rows test problem, with the console's output as a user sees it (plus the command and exit
status). The model, in order of its rewrite requests: a good kernel; prose with no code; a kernel that
does not compile, then the same kernel again as its "fix"; a kernel with wrong values, then an HTTP 500
on the fix; a hang; the first rewrite's code again, then a new kernel when told. Its first diagnosis is rate
limited on every attempt (429); reflections work. At the seventh rewrite the server is shut down (and
answers 503 on connections kept alive), so the run meets a model lost mid-run. After the run, each candidate's llm_calls.txt is printed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm_server import HttpError, Reply, Respond, ScriptedLLMServer, Slow  # noqa: E402

SOURCE = (ROOT / "tests/data/search/input_kernel.py").read_text()
PROBLEM = ROOT / "tests/data/scale_rows_problem.py"


def code(source: str) -> Reply:
    return Reply(f"Here is the kernel.\n```python\n{source}```\n")


def model(server: list[ScriptedLLMServer]):
    rewrites = itertools.count(1)
    diagnoses = itertools.count(1)
    lock = threading.Lock()
    hung: set[str] = set()  # a retried request that hung hangs again
    down = threading.Event()

    def choose(prompt: str):
        if down.is_set():  # keep-alive connections outlive a stopped server: refuse on them too
            return HttpError(503, "model server is down")
        if "Reply with the word OK" in prompt:
            return Reply("OK")
        if "Look back at it" in prompt:
            return Reply(json.dumps({"expected": "faster", "observed": "see the verdict",
                                     "lesson": "keep the mask on the column loads", "try_next": "BLOCK_R = 16"}))  # fmt: skip
        if "what limits its speed" in prompt or "could not be used" in prompt:
            with lock:
                n = next(diagnoses)
            if n <= 2:  # the first diagnosis and its one retry
                return HttpError(429, "rate limit reached for requests", retry_after_s=1)
            return Reply(json.dumps([{"category": "memory", "summary": "too few rows per program"},
                                     {"category": "underutilized", "summary": "one warp would do"}]))  # fmt: skip
        if "failed verification" in prompt:
            if "compile" in prompt or "SyntaxError" in prompt or "NameError" in prompt:
                return code(SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 4\n    undefined_name_here()"))
            return HttpError(500, "upstream model crashed")
        if "which has already been measured" in prompt:  # told that its reply repeated a kernel
            return code(SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 16"))
        if "had no usable kernel" in prompt:  # the repair request after a reply with no code
            return Reply("Still thinking about it; no code yet.")
        with lock:
            if prompt in hung:
                return Slow(600.0)
            n = next(rewrites)
            if n == 4:
                hung.add(prompt)
        if n == 7:
            down.set()
            threading.Thread(target=server[0].stop, daemon=True).start()
        return {
            1: code(SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 8")),
            2: Reply("I would increase the block size and use more warps; that should help."),
            3: code(SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 4\n    undefined_name_here()")),
            4: Slow(600.0),
            5: code(SOURCE.replace("(x * w)", "(x * w * 2.0)")),
            6: code(SOURCE.replace("BLOCK_R = 4", "BLOCK_R = 8")),  # the first rewrite again
        }.get(n, HttpError(503, "shutting down"))

    return choose


def run_shown(cmd: list[str]) -> int:
    """Run a command of this checkout as a user would type it, printing the command, its output and its
    exit status (a transcript); returns the exit status."""
    shown = " ".join(c if c != sys.executable else "python" for c in cmd).replace(str(ROOT) + "/", "")
    print(f"$ {shown}", flush=True)
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT), "COLUMNS": "130"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="")
    print(f"[exit status {done.returncode}]")
    return done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", metavar="OUT_DIR", type=Path, help="folder the search writes into (OUT_DIR/run)")
    out = parser.parse_args(argv).out.resolve()
    box: list[ScriptedLLMServer] = []
    server = ScriptedLLMServer()
    box.append(server)
    server.default = Respond(model(box))
    with server:
        cmd = [sys.executable, "-m", "beamsearch.run", "--problem", str(PROBLEM), "--kernel",
               str(ROOT / "tests/data/search/input_kernel.py"), "--out", str(out / "run"), "--rounds", "3",
               "--workers", "2", "--directions", "3", "--beam-width", "1", "--llm", "openai/test-model",
               "--api-base", server.api_base, "--llm-timeout", "20", "--llm-retries", "1", "--task-timeout", "60"]  # fmt: skip
        run_shown(cmd)
    for calls in sorted((out / "run").glob("optimization_trace/round_*/candidates/*/llm_calls.txt")):
        print(f"\n$ cat {calls.relative_to(out)}")
        print(calls.read_text(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
