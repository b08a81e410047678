"""What every benchmark shares: its two flags, ``--json PATH`` and ``--quick``, and its report.

Every script under ``benchmarks/`` takes, beside its own flags:

* ``--json PATH``: where its JSON report goes. Each script's default is a file under
  ``benchmarks/results/`` (:data:`RESULTS_DIR`); with ``--quick`` it is that file's
  ``_quick`` sibling (``generation.json`` -> ``generation_quick.json``), so a short run never
  overwrites the figures the README quotes.
* ``--quick``: a short run (well under two minutes on two cores, where the work allows) that
  shows the script works; its figures are no headline. Flags given on the command line win
  over the settings ``--quick`` picks.

It writes the report with :func:`write_report` (from ``provenance``: the figures with the
machine, versions, commit and command) and prints its tables with ``table.print_table``.

The benchmarks run as scripts (``python benchmarks/<name>.py``), so they import this module by
its bare name.

Example:
    >>> import argparse
    >>> from report import RESULTS_DIR, add_common_arguments, parse_arguments
    >>> parser = argparse.ArgumentParser()
    >>> _ = parser.add_argument("--repeats", type=int, default=5)
    >>> add_common_arguments(parser, default_json=RESULTS_DIR / "demo.json", quick="1 repeat")
    >>> args = parse_arguments(parser, ["--quick"], quick_defaults={"repeats": 1})
    >>> args.repeats, args.json.name
    (1, 'demo_quick.json')
    >>> parse_arguments(parser, ["--quick", "--repeats", "2"], {"repeats": 1}).repeats
    2
    >>> parse_arguments(parser, [], {"repeats": 1}).repeats
    5
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from provenance import write_report

__all__ = [
    "RESULTS_DIR",
    "add_common_arguments",
    "parse_arguments",
    "quick_json_path",
    "write_report",
]

#: Where the benchmarks' reports go by default.
RESULTS_DIR = Path(__file__).resolve().parent / "results"
_REPO_ROOT = RESULTS_DIR.parent.parent


def quick_json_path(path: Path) -> Path:
    """Where a ``--quick`` run's report goes when ``path`` is the full run's default.

    Example:
        >>> quick_json_path(Path("results/generation.json")).as_posix()
        'results/generation_quick.json'
    """
    return path.with_name(f"{path.stem}_quick{path.suffix}")


def _shown(path: Path) -> str:
    """``path`` relative to the repository root where it lies inside it, for help texts."""
    try:
        return path.relative_to(_REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


def add_common_arguments(
    parser: argparse.ArgumentParser, *, default_json: Path, quick: str
) -> None:
    """Adds ``--json PATH`` and ``--quick`` to a benchmark's ``parser``.

    Args:
        parser: the script's parser, with its own flags.
        default_json: the full run's report (a file under :data:`RESULTS_DIR`).
        quick: what the short run does, for ``--help`` (e.g. ``"tiny-random model, 1
            repeat"``).
    """
    parser.add_argument(
        "--json",
        type=Path,
        default=default_json,
        metavar="PATH",
        help=f"where the JSON report goes (default: {_shown(default_json)}; with --quick: "
        f"{_shown(quick_json_path(default_json))})",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run that shows the script works, not a headline figure: {quick}; "
        "flags given on the command line still win",
    )


def parse_arguments(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    quick_defaults: Mapping[str, Any] | None = None,
) -> argparse.Namespace:
    """Parses ``argv`` (``None``: the command line); with ``--quick``, ``quick_defaults`` and
    the quick report path replace the parser's defaults, and flags given still win.

    Args:
        parser: a parser :func:`add_common_arguments` has added to.
        argv: the arguments, without the program name.
        quick_defaults: destination -> value (already of the flag's type) for a quick run.

    Returns:
        The parsed arguments.

    Raises:
        ValueError: ``quick_defaults`` names a destination the parser does not have.
    """
    args = parser.parse_args(argv)
    if not args.quick:
        return args
    defaults = {"json": quick_json_path(parser.get_default("json")), **(quick_defaults or {})}
    unknown = sorted(set(defaults) - set(vars(args)))
    if unknown:
        raise ValueError(f"quick_defaults names no flag of this parser: {unknown}")
    # argparse fills in a default only where the namespace has no value yet, so values put
    # there first act as defaults, and flags on the command line overwrite them.
    return parser.parse_args(argv, namespace=argparse.Namespace(**defaults))
