"""Write the compiler seed of one Inductor recording: a standalone kernel file, or why there is none.

    python scripts/write_compile_seed.py RECORDING --out SEED.py

RECORDING is a folder written by workers/harness/record_inductor.py (or record_inductor_cpu.py). Prints the
seed's record (kernels, configs, valid shapes, notes, or the reason it is unavailable) as JSON on stdout
and exits 1 when unavailable. The file is an ordinary kernel: verify and time it with
``python -m beamsearch.bench --problem P --kernel SEED.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.proposers.compile_seed import seed_from_recording  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("recording", type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    result = seed_from_recording(args.recording)
    print(result.model_dump_json(indent=1, exclude={"source"}))
    if not result.available:
        raise SystemExit(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(result.source)


if __name__ == "__main__":
    main()
