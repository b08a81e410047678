"""How numbers, times and sampling settings read on the page.

Example:
    >>> percent(0.8333), interval(0.6213, 0.9421)
    ('83.3%', '62.1–94.2')
    >>> sampling_label({"temperature": 0}), sampling_label({"temperature": 0.7, "seed": 3})
    ('', 'T=0.7, seed 3')
    >>> moment(0.0)
    '1970-01-01 00:00 UTC'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "checkpoint_of",
    "duration",
    "interval",
    "is_greedy",
    "moment",
    "number",
    "percent",
    "sampling_label",
]

_CHECKPOINT = re.compile(r"^(?P<run>.+)@step-(?P<step>\d+)$")


def percent(rate: float | None) -> str:
    """A rate in [0, 1] as a percentage with one decimal; ``—`` for none."""
    return "—" if rate is None else f"{100 * rate:.1f}%"


def interval(low: float, high: float) -> str:
    """An interval of rates as ``low–high`` in percent."""
    return f"{100 * low:.1f}–{100 * high:.1f}"


def number(value: float, digits: int = 2) -> str:
    """A number with at most ``digits`` decimals, without trailing zeros.

    Example:
        >>> number(10.9), number(-0.10000001), number(3)
        ('10.9', '-0.1', '3')
    """
    text = f"{value:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def is_greedy(sampling: Mapping[str, Any]) -> bool:
    """Whether sampling parameters mean greedy decoding (no temperature, or temperature 0)."""
    return not float(sampling.get("temperature") or 0.0) > 0.0


def sampling_label(sampling: Mapping[str, Any]) -> str:
    """What sets a sampled evaluation apart from a greedy one; ``""`` for greedy."""
    if is_greedy(sampling):
        return ""
    parts = [f"T={number(float(sampling['temperature']), 3)}"]
    if sampling.get("top_p") not in (None, 1, 1.0):
        parts.append(f"top-p {number(float(sampling['top_p']), 3)}")
    if sampling.get("seed") is not None:
        parts.append(f"seed {sampling['seed']}")
    return ", ".join(parts)


def moment(seconds: float | None) -> str:
    """A time since the epoch, in UTC to the minute; ``—`` for none."""
    if seconds is None:
        return "—"
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds: float | None) -> str:
    """A span of seconds as ``1 h 02 min``, ``3 min 05 s`` or ``4.2 s``.

    Example:
        >>> duration(4.21), duration(185), duration(3725)
        ('4.2 s', '3 min 05 s', '1 h 02 min')
    """
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def checkpoint_of(model: str) -> tuple[str, int] | None:
    """The run and step of a model named after a ``roll-agent train`` checkpoint
    (``<run_id>@step-<N>``), else ``None``.

    Example:
        >>> checkpoint_of("sokoban-20250101@step-40"), checkpoint_of("oracle")
        (('sokoban-20250101', 40), None)
    """
    match = _CHECKPOINT.match(model)
    return (match["run"], int(match["step"])) if match else None
