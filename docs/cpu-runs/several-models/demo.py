"""The CPU run of docs/cpu-runs/several-models/: three scripted OpenAI-compatible servers on 127.0.0.1
under three model names, one answering good kernels, one prose with no code, one too slowly for the
request timeout; the slow one's server is stopped after round 1. Then the run is resumed for one more
round. Run from the repository root: ``python docs/cpu-runs/several-models/demo.py OUT_DIR``."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tests.llm_server import Reply, Respond, ScriptedLLMServer, Slow  # noqa: E402

START = ROOT / "tests/data/search/input_kernel.py"
PROBLEM = ROOT / "tests/data/scale_rows_problem.py"
DIAGNOSIS = json.dumps([{"category": "memory", "summary": "rows per program"}])
REFLECTION = json.dumps({"expected": "fewer programs", "observed": "as timed", "lesson": "rows per program matter"})
ROWS = itertools.cycle([8, 16, 2, 32, 1, 64, 128])


def good(prompt: str) -> Reply:
    if "Reply with the word OK" in prompt:
        return Reply("OK")
    if "what limits its speed" in prompt:
        return Reply(DIAGNOSIS)
    if "Look back at it" in prompt:
        return Reply(REFLECTION)
    source = START.read_text().replace("BLOCK_R = 4", f"BLOCK_R = {next(ROWS)}")
    return Reply(f"More rows per program:\n```python\n{source}```\n", prompt_tokens=900, completion_tokens=400)


def garbage(prompt: str) -> Reply:
    return Reply("OK" if "Reply with the word OK" in prompt else "You could try tiling it differently.")


def slow(prompt: str) -> Reply | Slow:
    return Reply("OK") if "Reply with the word OK" in prompt else Slow(8.0, good(prompt))


def run(args: list[str], on_line=lambda line: None) -> int:
    proc = subprocess.Popen([sys.executable, "-m", "beamsearch.run", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        on_line(line)
    return proc.wait()


def main(out: Path) -> None:
    servers = {name: ScriptedLLMServer(default=Respond(fn)).start() for name, fn in
               (("good", good), ("garbage", garbage), ("slow", slow))}  # fmt: skip
    models: list[str] = []
    for name, server in servers.items():
        models += ["--llm", f"openai/{name}", "--api-base", server.api_base]

    def stop_slow_after_round_1(line: str) -> None:
        if line.startswith("round 1:"):
            print("[demo] stopping the server of openai/slow", flush=True)
            threading.Thread(target=servers["slow"].stop, daemon=True).start()

    common = ["--llm-timeout", "5", "--llm-retries", "0", "--task-timeout", "120"]
    print(f"$ python -m beamsearch.run --problem {PROBLEM.name} --kernel {START.name} --out OUT --rounds 4 "
          f"--workers 2 --beam-width 1 --directions 3 --candidates-per-round 3 {' '.join(models)} "
          f"{' '.join(common)}", flush=True)  # fmt: skip
    run(["--problem", str(PROBLEM), "--kernel", str(START), "--out", str(out), "--rounds", "4", "--workers", "2",
         "--beam-width", "1", "--directions", "3", "--candidates-per-round", "3", *models, *common],
        stop_slow_after_round_1)  # fmt: skip
    state = json.loads((out / "state.json").read_text())
    print("[demo] shares saved in state.json:", {s["model"]: round(s["share"], 3) for s in state["models"]["stats"]})
    print(f"$ python -m beamsearch.run --resume --out OUT --rounds 5 {' '.join(models)}", flush=True)
    run(["--resume", "--out", str(out), "--rounds", "5", *models])
    for server in servers.values():
        if server is not servers["slow"]:
            server.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
