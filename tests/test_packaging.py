"""What a non-editable install carries: the product's code, the compiler seed's recorder among it.

A wheel is built from a copy of the packaged files (so nothing is written into the checkout), unpacked,
and the recorder a GPU run starts as ``python -m`` is run from the unpacked copy alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel: CI runs these (pytest -m slow)

ROOT = Path(__file__).resolve().parent.parent
PACKAGED = ("beamsearch", "workers", "profiling", "prompts")


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in PACKAGED:
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path_factory.mktemp("wheels")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = wheels.glob("beamsearch-*.whl")
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def test_the_wheel_carries_the_recorder_and_the_records(unpacked_wheel: Path) -> None:
    for module in ("workers/harness/record_inductor.py", "workers/harness/inductor_graph_args.py",
                   "workers/harness/record_inductor_cpu.py", "beamsearch/records/schema.py",
                   "beamsearch/run.py", "profiling/ncu_child.py"):  # fmt: skip
        assert (unpacked_wheel / module).is_file(), module
    assert list((unpacked_wheel / "prompts" / "templates").glob("*.md")), "the prompt templates"
    assert not (unpacked_wheel / "scripts").exists(), "scripts/ holds tools run from a checkout, not product code"


def test_the_recorder_runs_from_the_installed_copy(unpacked_wheel: Path, tmp_path: Path) -> None:
    """The module the compiler seed starts, found in the installed copy (not the checkout), answers."""
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel), "PYTHONSAFEPATH": "1"}
    probe = "import workers.harness.record_inductor as m, workers.actor.task as t; print(m.__file__); print(t.RECORDER_MODULE)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    where, module = done.stdout.split()
    assert Path(where).is_relative_to(unpacked_wheel)
    helped = subprocess.run([sys.executable, "-m", module, "--help"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
    assert helped.returncode == 0 and "--problem" in helped.stdout, helped.stderr[-2000:]
