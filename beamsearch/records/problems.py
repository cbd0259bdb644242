"""Finding problems: a bundled name under ``artifacts/`` or any path to a KernelBench ``problem.py``.

This module only resolves paths; it never imports a problem (children do, see
``workers/harness/problem_instance.py``), so the driver stays free of torch and of user code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from beamsearch.records.schema import Record, ShapeSet


def _artifacts_dir() -> Path:
    """The checkout's ``artifacts/`` beside the packages; from an installed wheel, which carries no
    problems, the working folder's (a checkout's root, as the README runs it)."""
    beside = Path(__file__).resolve().parents[2] / "artifacts"
    return beside if beside.is_dir() else Path.cwd() / "artifacts"


ARTIFACTS_DIR = _artifacts_dir()
PROBLEM_FILE = "problem.py"
INPUT_KERNEL_FILE = "input_kernel.py"


class ProblemNotFound(LookupError):
    pass


class ProblemRef(Record):
    name: str
    problem_path: str
    input_kernel_path: str | None = None


def bundled_problem_names() -> list[str]:
    if not ARTIFACTS_DIR.is_dir():
        return []
    return sorted(p.name for p in ARTIFACTS_DIR.iterdir() if (p / PROBLEM_FILE).is_file())


def resolve_problem(name_or_path: str) -> ProblemRef:
    """A bundled problem's name (or a unique prefix such as ``43``), a problem folder, or a problem file.

    Raises ProblemNotFound with the list of bundled problems when nothing matches.
    """
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return _ref(path.resolve().parent.name if path.name == PROBLEM_FILE else path.stem, path.resolve())
    if path.is_dir() and (path / PROBLEM_FILE).is_file():
        return _ref(path.resolve().name, (path / PROBLEM_FILE).resolve())
    names = bundled_problem_names()
    matches = [n for n in names if n == name_or_path] or [n for n in names if n.startswith(name_or_path)]
    if len(matches) == 1:
        return _ref(matches[0], ARTIFACTS_DIR / matches[0] / PROBLEM_FILE)
    known = "\n  ".join(names) or "(none: artifacts/ is missing)"
    if len(matches) > 1:
        raise ProblemNotFound(f"'{name_or_path}' matches several problems: {', '.join(matches)}")
    raise ProblemNotFound(
        f"no problem '{name_or_path}': not a file, not a folder with {PROBLEM_FILE}, "
        f"not a bundled problem. Bundled problems:\n  {known}"
    )


def _ref(name: str, problem_path: Path) -> ProblemRef:
    kernel = problem_path.parent / INPUT_KERNEL_FILE
    return ProblemRef(
        name=name,
        problem_path=str(problem_path),
        input_kernel_path=str(kernel) if kernel.is_file() else None,
    )


def problem_sizes(problem_path: str, shapes: ShapeSet) -> dict[str, int]:
    """The problem's dimensions by name, read from its source without running it: the module's int
    constants (``batch_size = 112``), and for the small shapes the ``SMALL_SHAPES`` dict over them.
    Empty when the file does not parse. They bound the optimiser's block sizes."""
    try:
        tree = ast.parse(Path(problem_path).read_text())
    except (OSError, SyntaxError, ValueError):
        return {}
    sizes: dict[str, int] = {}
    small: dict[str, int] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if isinstance(value, ast.Constant) and type(value.value) is int and value.value > 0:
            sizes[name] = value.value
        elif name == "SMALL_SHAPES" and isinstance(value, ast.Dict):
            small = {k.value: v.value for k, v in zip(value.keys, value.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)
                     and isinstance(v, ast.Constant) and type(v.value) is int}  # fmt: skip
    return sizes | small if shapes == "small" else sizes
