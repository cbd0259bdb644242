"""convergence.png: the running best time per round of a search, against its references.

A pure function of numbers (``Convergence``), drawn with matplotlib's Agg canvas (no pyplot, no display,
no global state), written atomically like the trace.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from beamsearch.trace import TraceWriteError

# (colour, line style) of the horizontal references, by label prefix; anything else is grey and dotted.
STYLES = {"torch.compile max-autotune": ("C2", ":"), "torch.compile": ("C1", "-"), "PyTorch eager": ("0.4", "--"),
          "floor": ("k", "-.")}  # fmt: skip


@dataclass(frozen=True)
class Convergence:
    title: str
    running: list[tuple[int, float]] = field(default_factory=list)  # (round, running best ms); round 0: input
    round_best: list[tuple[int, float]] = field(default_factory=list)  # each round's fastest new candidate
    failed_rounds: list[int] = field(default_factory=list)  # rounds where no candidate passed
    final: tuple[int, float, str] | None = None  # (round drawn at, ms, id) of the best re-timed at the end
    references: list[tuple[str, float]] = field(default_factory=list)  # (label, ms): baselines, floor


def plot_convergence(c: Convergence, path: Path) -> None:
    """Draw ``c`` into ``path``: a step line of the running best, log scale when times span > 20x."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    fig = Figure(figsize=(10, 4.8), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    drawn = [ms for _, ms in c.running + c.round_best] + [ms for _, ms in c.references]
    if c.running:
        ax.step(*zip(*c.running, strict=True), where="post", marker="o", color="C0", lw=2, label="running best")
    if c.round_best:
        ax.scatter(*zip(*c.round_best, strict=True), facecolors="none", edgecolors="C0", alpha=0.6, s=40, zorder=3,
                   label="round's best new candidate")  # fmt: skip
    for i, r in enumerate(c.failed_rounds):
        ax.axvspan(r - 0.4, r + 0.4, color="red", alpha=0.08, label="no candidate passed" if i == 0 else None)
    if c.final is not None:
        x, ms, name = c.final
        ax.scatter([x], [ms], marker="*", s=160, color="C3", zorder=4, label=f"best, re-timed at the end ({name})")
        drawn.append(ms)
    for label, ms in c.references:
        color, style = next((s for prefix, s in STYLES.items() if label.startswith(prefix)), ("0.6", ":"))
        ax.axhline(ms, color=color, ls=style, lw=1.3, label=f"{label} {ms:.4g} ms")
    if not drawn:
        ax.text(0.5, 0.5, "no kernel timed yet", ha="center", va="center", transform=ax.transAxes)
    elif max(drawn) / min(drawn) > 20:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    else:
        ax.set_ylim(bottom=0)
    ax.set_title("\n".join(textwrap.fill(line, 110) for line in c.title.splitlines()), fontsize=9)
    ax.set_xlabel("round (0: the input kernel)")
    ax.set_ylabel("median time per call, ms")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    _save_png(fig, path)


def _save_png(fig, path: Path) -> None:
    tmp = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png")
        os.replace(tmp, path)
    except OSError as e:
        if tmp:
            Path(tmp).unlink(missing_ok=True)
        raise TraceWriteError(e.errno, f"could not write {path}: {e.strerror or e}") from e
