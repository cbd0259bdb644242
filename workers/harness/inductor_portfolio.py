"""The compiler seed's portfolio: the Inductor configurations a problem is recorded under, read from a file.

max-autotune tunes block sizes, but not the shape of the code: whether a reduction is persistent, looped,
split or online, how a kernel is tiled. Those are Inductor options (``torch._inductor.config``), and each
variant of the portfolio is a name and a table of them, applied on top of the recorder's own settings in
a fresh process with a fresh cache (workers/harness/record_inductor.py, record_inductor_cpu.py). The list
is data: ``inductor_portfolio.toml`` beside this module, or a user's file of the same form (the run's
``compiler_portfolio``). The first variant is always ``default``, with no options: max-autotune's own seed.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from beamsearch.records.schema import Record

BUNDLED_PORTFOLIO = Path(__file__).with_name("inductor_portfolio.toml")
DEFAULT_VARIANT = "default"
VARIANT_NAME = re.compile(r"[A-Za-z0-9_-]+")  # it names a folder and a candidate id

OptionValue = bool | int | float | str


class PortfolioVariant(Record):
    """One Inductor configuration to record the compiler seed under."""

    name: str = Field(description="letters, digits, _ and -: the seed's id is compiler-seed-<name>")
    options: dict[str, OptionValue] = Field(
        default_factory=dict, description="torch._inductor.config options, dotted (triton.multi_kernel) -> value"
    )

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not VARIANT_NAME.fullmatch(name):
            raise ValueError(f"variant name {name!r}: use letters, digits, _ and - only")
        return name

    def option_args(self) -> list[str]:
        """The recorders' command-line arguments for this variant."""
        args = ["--variant", self.name]
        for key, value in self.options.items():
            args += ["--option", f"{key}={format_value(value)}"]
        return args


class PortfolioError(ValueError):
    """A portfolio file that cannot be read; the message names the file and what is wrong."""


def load_portfolio(path: str | Path | None = None) -> list[PortfolioVariant]:
    """The variants of a portfolio file (the bundled one when None), ``default`` first, names unique."""
    path = Path(path).expanduser() if path is not None else BUNDLED_PORTFOLIO
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PortfolioError(f"portfolio file {path}: {e}") from e
    entries = data.get("variant", [])
    if not isinstance(entries, list) or set(data) - {"variant"}:
        raise PortfolioError(f"portfolio file {path}: expected only [[variant]] tables, got {sorted(data)}")
    try:
        variants = [PortfolioVariant.model_validate(e) for e in entries]
    except ValueError as e:
        raise PortfolioError(f"portfolio file {path}: {e}") from e
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise PortfolioError(f"portfolio file {path}: variant names repeat: {names}")
    default = next((v for v in variants if v.name == DEFAULT_VARIANT), PortfolioVariant(name=DEFAULT_VARIANT))
    if default.options:
        raise PortfolioError(f"portfolio file {path}: the default variant is max-autotune's own seed: no options")
    return [default, *(v for v in variants if v.name != DEFAULT_VARIANT)]


def parse_option(text: str) -> tuple[str, OptionValue]:
    """``key=value`` (a recorder's ``--option``): the value as a TOML literal (``1``, ``false``,
    ``"EXHAUSTIVE"``), a bare word as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"--option {text!r}: expected key=value")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    if not isinstance(value, OptionValue):
        raise ValueError(f"--option {text!r}: a value must be a bool, number or string")
    return key.strip(), value


def format_value(value: OptionValue) -> str:
    """``value`` as ``parse_option`` reads it back."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def apply_options(config: Any, options: dict[str, OptionValue]) -> tuple[dict[str, OptionValue], dict[str, str]]:
    """Set each option on ``config`` (``torch._inductor.config``); those this torch lacks, or whose value
    is of another kind than the option's, are skipped. Returns (applied, skipped option -> reason)."""
    applied: dict[str, OptionValue] = {}
    skipped: dict[str, str] = {}
    for key, value in options.items():
        *parents, leaf = key.split(".")
        target = config
        for part in parents:
            target = getattr(target, part, None)
        if target is None or not hasattr(target, leaf):
            skipped[key] = f"torch._inductor.config has no option {key} in this torch"
            continue
        current = getattr(target, leaf)
        if not _same_kind(current, value):
            skipped[key] = f"{key} is {current!r} ({type(current).__name__}); {value!r} is not of that kind"
            continue
        setattr(target, leaf, value)
        applied[key] = value
    return applied, skipped


def _same_kind(current: object, value: OptionValue) -> bool:
    if current is None:  # an option unset by default takes any value
        return True
    if isinstance(current, bool):
        return isinstance(value, bool)
    if isinstance(current, int):  # multi_kernel is an int also set as a flag: a bool stands for 0 or 1 there
        return isinstance(value, int)
    if isinstance(current, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, type(current))


def recorded_variants(folder: str | Path, order: Sequence[str] = ()) -> list[str]:
    """The variants a recording folder holds: ``default`` alone for one recording (``output_code.py`` in
    it), else each sub-folder that holds one: a portfolio recorded with scripts/record_portfolio.py.
    ``default`` first, then in ``order`` (the portfolio's), then the rest by name: the dedupe keeps the
    first variant of each code, the one whose options the portfolio lists first."""
    folder = Path(folder)
    if (folder / "output_code.py").is_file():
        return [DEFAULT_VARIANT]
    names = [p.name for p in folder.iterdir() if (p / "output_code.py").is_file()] if folder.is_dir() else []
    rank = {name: i for i, name in enumerate(order)}
    return sorted(names, key=lambda n: (n != DEFAULT_VARIANT, rank.get(n, len(rank)), n))


def recorded_variant_folder(folder: str | Path, variant: str) -> Path | None:
    """Where ``variant``'s recording is in a folder ``recorded_variants`` reads; None if it has none."""
    folder = Path(folder)
    if (folder / "output_code.py").is_file():
        return folder if variant == DEFAULT_VARIANT else None
    return folder / variant if (folder / variant / "output_code.py").is_file() else None
