"""Imports point one way: shared data <- harness, proposers, profiling <- actor and task <- driver and CLIs.

Every import of ours in the four packages, lazy ones inside functions included, is checked against the
layers below. The imports that still point the wrong way are listed in KNOWN_AGAINST; the list may only
shrink: a new one fails, and so does a listed one that is gone (take it off the list).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("beamsearch", "workers", "profiling", "prompts")
SHARED_DATA, HARNESS, ACTOR, DRIVER = 0, 1, 2, 3
LAYER_NAMES = ("shared data", "harness/proposers/profiling", "actor/task", "driver/CLIs")

# Exact modules first, then package prefixes; the longest match wins.
LAYERS = {
    "beamsearch.records": SHARED_DATA,
    "prompts.records": SHARED_DATA,
    "workers": HARNESS,
    "workers.harness": HARNESS,
    "workers.proposers": HARNESS,
    "workers.actor": ACTOR,
    "profiling": HARNESS,
    "prompts": HARNESS,
    "beamsearch": DRIVER,
}

KNOWN_AGAINST: set[tuple[str, str]] = set()


def layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return LAYERS[".".join(parts[:n])]
    raise KeyError(module)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def our_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {m for m in found if m.split(".")[0] in PACKAGES}


def imports_against_the_direction() -> set[tuple[str, str]]:
    against = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            importer = module_name(path)
            for imported in our_imports(path):
                if layer(imported) > layer(importer):
                    against.add((importer, imported))
    return against


def test_imports_point_one_way() -> None:
    against = imports_against_the_direction()
    new = sorted(against - KNOWN_AGAINST)
    assert not new, (
        "imports against the direction (a layer may import only its own or a lower one):\n"
        + "\n".join(f"  {a} ({LAYER_NAMES[layer(a)]}) imports {b} ({LAYER_NAMES[layer(b)]})" for a, b in new)
    )
    fixed = sorted(KNOWN_AGAINST - against)
    assert not fixed, f"no longer imported, take them off KNOWN_AGAINST: {fixed}"


def test_the_check_sees_lazy_imports_and_layers(tmp_path) -> None:
    """A lazy import inside a function counts; a module that is not ours does not."""
    source = tmp_path / "m.py"
    source.write_text(
        "import os\n\ndef f():\n    from beamsearch.driver import Driver\n    import workers.actor.task\n"
    )
    assert our_imports(source) == {"beamsearch.driver", "workers.actor.task"}
    assert [layer(m) for m in ("beamsearch.records.schema", "workers.harness.clock", "workers.actor.task", "beamsearch.run")] == [
        0,
        1,
        2,
        3,
    ]
    assert layer("workers.proposers.llm") == HARNESS and layer("prompts.records") == SHARED_DATA


def test_the_harness_and_the_proposers_stay_apart() -> None:
    """workers/ holds three concerns: the harness and the proposers import neither each other nor the
    actor; only the actor's task ties them together."""
    for part, others in (("harness", ("workers.proposers", "workers.actor")), ("proposers", ("workers.harness", "workers.actor"))):
        for path in sorted((ROOT / "workers" / part).glob("*.py")):
            wrong = {m for m in our_imports(path) if m.startswith(others)}
            assert not wrong, f"{module_name(path)} imports {sorted(wrong)}"
