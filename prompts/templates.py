"""Prompt templates: files found by name, filled by one explicit substitution.

Placeholder syntax: ``{{name}}``, where ``name`` is a Python identifier with no spaces inside the braces.
Nothing else in a template is special: single braces, ``{{ x }}`` with spaces, ``$`` and ``%`` are plain
text, so code and JSON can sit in a template unescaped. Substitution is one pass over the template, so a
value (a kernel's source, a JSON schema) is never scanned for placeholders itself.

Lookup: a caller-given override folder first (e.g. from the run's config), then this package's
``templates/`` folder, per file: an override folder may replace only some of the templates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

PACKAGE_DIR = Path(__file__).parent / "templates"
SUFFIX = ".md"
PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")


class MissingPlaceholder(KeyError):
    """A template names placeholders that were given no value."""

    def __init__(self, missing: list[str], available: list[str], template: str = "") -> None:
        self.missing = missing
        self.available = available
        self.template = template
        where = f"template {template!r}" if template else "the template"
        names = ", ".join("{{" + m + "}}" for m in missing)
        offered = ", ".join(available) if available else "(none)"
        super().__init__(f"{where} has no value for {names}; available: {offered}")

    def __str__(self) -> str:  # KeyError's own __str__ would show the message in quotes
        return str(self.args[0])


class TemplateNotFound(FileNotFoundError):
    pass


def template_names(override_dir: Path | None = None) -> list[str]:
    """Every template name that ``load_template`` can find, override folder included."""
    dirs = [PACKAGE_DIR] + ([Path(override_dir)] if override_dir is not None else [])
    return sorted({p.stem for d in dirs if d.is_dir() for p in d.glob(f"*{SUFFIX}")})


def template_path(name: str, override_dir: Path | None = None) -> Path:
    """The file that holds template ``name`` (``"diagnose"`` or ``"diagnose.md"``).

    Raises ``NotADirectoryError`` for an override folder that does not exist (a mistyped config path
    should not silently fall back to the defaults) and ``TemplateNotFound`` for an unknown name.
    """
    filename = name if name.endswith(SUFFIX) else name + SUFFIX
    searched = []
    if override_dir is not None:
        override_dir = Path(override_dir).expanduser()
        if not override_dir.is_dir():
            raise NotADirectoryError(f"prompt template folder {override_dir} does not exist")
        searched.append(override_dir)
    searched.append(PACKAGE_DIR)
    for folder in searched:
        path = folder / filename
        if path.is_file():
            return path
    raise TemplateNotFound(
        f"no template {filename!r} in {', '.join(map(str, searched))}; "
        f"templates: {', '.join(template_names(override_dir))}"
    )


def load_template(name: str, override_dir: Path | None = None) -> str:
    return template_path(name, override_dir).read_text(encoding="utf-8")


def placeholders(template_text: str) -> list[str]:
    """The placeholder names in a template, in order of first appearance."""
    return list(dict.fromkeys(PLACEHOLDER.findall(template_text)))


def render(template_text: str, values: Mapping[str, object], *, template_name: str = "") -> str:
    """Fill every ``{{name}}`` with ``str(values[name])``.

    Values for names the template lacks are fine (an override may leave some out); a placeholder with
    no value raises ``MissingPlaceholder`` naming it and listing the names there are values for.
    """
    missing = [name for name in placeholders(template_text) if name not in values]
    if missing:
        raise MissingPlaceholder(missing, sorted(values), template_name)
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template_text)


def render_template(name: str, values: Mapping[str, object], override_dir: Path | None = None) -> str:
    """Load template ``name`` (override folder first) and fill it."""
    path = template_path(name, override_dir)
    return render(path.read_text(encoding="utf-8"), values, template_name=str(path))
