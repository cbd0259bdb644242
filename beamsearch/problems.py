"""Finding problems: a bundled name under ``artifacts/`` or any path to a KernelBench ``problem.py``.

This module only resolves paths; it never imports a problem (children do, see
``workers/problem_instance.py``), so the driver stays free of torch and of user code.
"""

from __future__ import annotations

from pathlib import Path

from beamsearch.schema import Record

ARTIFACTS_DIR = Path(__file__).resolve().parent.parent / "artifacts"
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
