"""The page's charts, drawn by matplotlib as SVG and inlined in the HTML.

Two kinds: an env's chart (each model's success rate with its Wilson 95% interval as error
bars) and a training run's learning curve (success against step, a line per env). Figures are
built through ``matplotlib.figure.Figure`` (no pyplot state); a lock guards the rc settings
each drawing sets, because the server renders pages on several threads.

Example:
    >>> svg = env_chart([Bar("oracle", 1.0, 0.72, 1.0), Bar("random", 0.1, 0.02, 0.4)], key="a")
    >>> svg.startswith("<svg") and "</svg>" in svg
    True
"""

from __future__ import annotations

import functools
import io
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import matplotlib
from matplotlib.figure import Figure

from leaderboard.site.paths import slug

__all__ = ["Bar", "Curve", "env_chart", "learning_chart"]

_INK = "#1f2937"
_MUTED = "#6b7280"
_ACCENT = "#2563eb"
_BASELINE = "#9ca3af"
_SERIES = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#db2777"]
_LONGEST_LABEL = 34
_LOCK = threading.Lock()
_PREAMBLE = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_ID = re.compile(r'\b(id)="([^"]+)"')
_REFERENCE = re.compile(r'(href="|url\()#([^")]+)')


@dataclass(frozen=True)
class Bar:
    """One model's point on an env's chart: its success rate and interval, in [0, 1]."""

    label: str
    rate: float
    low: float
    high: float
    baseline: bool = False


@dataclass(frozen=True)
class Curve:
    """One env's learning curve in a run: success rate (in [0, 1]) by step."""

    env_id: str
    steps: Sequence[int]
    rates: Sequence[float]


def env_chart(bars: Sequence[Bar], key: str) -> str:
    """Models against success rate with 95% intervals, best at the top, as an SVG string.

    Args:
        bars: the models, in the order to show them top down.
        key: unique among the charts of one page (it salts the SVG's element ids).
    """
    return _env_svg(tuple(bars), key)


@functools.lru_cache(maxsize=256)
def _env_svg(bars: tuple[Bar, ...], key: str) -> str:
    # cached: the served app draws every chart of a page again on each request
    height = 0.9 + 0.34 * max(1, len(bars))
    with _drawing():
        return _svg(_env_figure(bars, height), key)


def _env_figure(bars: Sequence[Bar], height: float) -> Figure:
    figure = Figure(figsize=(5.2, height))
    axes = figure.add_subplot()
    ys = list(range(len(bars)))[::-1]
    for y, bar in zip(ys, bars, strict=True):
        colour = _BASELINE if bar.baseline else _ACCENT
        axes.errorbar(
            [100 * bar.rate],
            [y],
            # an interval's end can miss the rate by a rounding error (Wilson's upper end at
            # n of n is 0.9999999999999999): matplotlib refuses negative error bars
            xerr=[[100 * max(0.0, bar.rate - bar.low)], [100 * max(0.0, bar.high - bar.rate)]],
            fmt="o",
            color=colour,
            ecolor=colour,
            elinewidth=2,
            capsize=3,
            markersize=6,
        )
    axes.set_yticks(ys, [_short(bar.label) for bar in bars])
    axes.set_ylim(-0.7, len(bars) - 0.3)
    axes.set_xlim(-2, 102)
    axes.set_xlabel("success rate (%), 95% Wilson interval")
    _style(axes)
    axes.grid(axis="x", color="#e5e7eb", linewidth=0.8)
    return figure


def learning_chart(curves: Sequence[Curve], key: str) -> str:
    """Success rate against training step, one line per env, as an SVG string."""
    frozen = tuple(Curve(c.env_id, tuple(c.steps), tuple(c.rates)) for c in curves)
    return _learning_svg(frozen, key)


@functools.lru_cache(maxsize=64)
def _learning_svg(curves: tuple[Curve, ...], key: str) -> str:
    with _drawing():
        return _svg(_learning_figure(curves), key)


def _learning_figure(curves: Sequence[Curve]) -> Figure:
    figure = Figure(figsize=(5.6, 3.0))
    axes = figure.add_subplot()
    for index, curve in enumerate(curves):
        axes.plot(
            list(curve.steps),
            [100 * rate for rate in curve.rates],
            marker="o",
            markersize=4,
            linewidth=1.8,
            color=_SERIES[index % len(_SERIES)],
            label=_short(curve.env_id),
        )
    axes.set_ylim(-3, 103)
    axes.set_xlabel("training step")
    axes.set_ylabel("success rate (%)")
    _style(axes)
    axes.grid(color="#e5e7eb", linewidth=0.8)
    if len(curves) > 1:
        axes.legend(frameon=False, fontsize=8)
    return figure


def _style(axes: matplotlib.axes.Axes) -> None:
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)
    for side in ("left", "bottom"):
        axes.spines[side].set_color(_MUTED)
    axes.tick_params(colors=_INK, labelsize=9)
    axes.xaxis.label.set_color(_INK)
    axes.yaxis.label.set_color(_INK)
    axes.set_axisbelow(True)


def _short(label: str) -> str:
    return label if len(label) <= _LONGEST_LABEL else label[: _LONGEST_LABEL - 1] + "…"


@contextmanager
def _drawing() -> Iterator[None]:
    settings: Mapping[str, object] = {
        # text stays text, in the page's font (no glyph paths)
        "svg.fonttype": "none",
        # model names are untrusted text, not TeX: a '$' must not start math
        "text.parse_math": False,
        "font.size": 9,
    }
    with _LOCK, matplotlib.rc_context(settings):
        yield


def _svg(figure: Figure, key: str) -> str:
    figure.set_layout_engine("constrained")
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", transparent=True, metadata={"Date": None})
    svg = _PREAMBLE.sub("", buffer.getvalue(), count=1).strip()
    # several charts share one HTML document: every id gets the chart's key, so none repeats
    # and each reference still finds its own definition
    prefix = f"chart-{slug(key)}-"
    svg = _ID.sub(lambda m: f'{m[1]}="{prefix}{m[2]}"', svg)
    return _REFERENCE.sub(lambda m: f"{m[1]}#{prefix}{m[2]}", svg)
