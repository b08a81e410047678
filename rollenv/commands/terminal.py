"""What the ``roll-agent`` commands print: tables and progress, with rich on a terminal and as
plain text in logs and pipes.

Example:
    >>> from rollenv.commands.terminal import print_table
    >>> print_table(["id", "success"], [["Sokoban-v0", "1.00"]], title="oracle")
    oracle
    id          success
    ----------  -------
    Sokoban-v0  1.00
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

__all__ = ["episode_progress", "labelled_progress", "print_table"]


def print_table(
    columns: list[str], rows: list[list[str]], *, title: str, no_wrap_columns: int = 0
) -> None:
    """Prints a table with ``rich`` on a terminal, else (or without rich) as plain aligned text.

    Args:
        columns: the column headers.
        rows: the cells, one list of strings per row.
        title: shown above the table.
        no_wrap_columns: how many leading columns are never wrapped or cut (e.g. ids).
    """
    try:
        if not sys.stdout.isatty():  # logs and pipes get every cell whole, at any width
            raise ImportError
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(_plain_table(columns, rows, title=title))
        return
    table = Table(title=title)
    for index, column in enumerate(columns):
        if index < no_wrap_columns:
            width = max(len(cell) for cell in [column, *(row[index] for row in rows)])
            table.add_column(column, no_wrap=True, min_width=width)
        else:
            table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)


def _plain_table(columns: list[str], rows: list[list[str]], *, title: str) -> str:
    widths = [
        max(len(cell) for cell in [column, *(row[i] for row in rows)])
        for i, column in enumerate(columns)
    ]

    def line(cells: list[str]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))

    body = [line(columns), line(["-" * width for width in widths]), *map(line, rows)]
    return "\n".join([title, *(text.rstrip() for text in body)])


@contextlib.contextmanager
def episode_progress(total: int, unit: str = "episodes") -> Iterator[Callable[[str], None]]:
    """Shows progress over ``total`` episodes (or other ``unit``s) on stderr, on a terminal.

    Yields:
        ``advance(policy_name)``, to call after each episode.
    """
    if not sys.stderr.isatty():
        yield lambda policy: None
        return
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:
        yield from _plain_progress(total, unit)
        return
    with Progress(transient=True, console=Console(stderr=True)) as progress:
        task = progress.add_task(unit, total=total)
        yield lambda policy: progress.update(task, advance=1, description=f"{policy} {unit}")


def _plain_progress(total: int, unit: str) -> Iterator[Callable[[str], None]]:
    done = 0

    def advance(policy: str) -> None:
        nonlocal done
        done += 1
        print(f"\r{policy} {unit}: {done}/{total}", end="", file=sys.stderr, flush=True)

    yield advance
    print(file=sys.stderr)


@contextlib.contextmanager
def labelled_progress(
    total: int, unit: str = "episodes", every: int = 1
) -> Iterator[Callable[[str, int], None]]:
    """``update(label, done)`` (after each stored chunk of episodes): a rich bar on a terminal,
    else a line (every ``every`` units, and at the end)."""
    if sys.stderr.isatty():
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
        except ImportError:
            pass
        else:
            columns = (
                "{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
            )
            with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task(unit, total=total)
                yield lambda env_id, done: bar.update(task, completed=done, description=env_id)
            return

    def line(label: str, done: int) -> None:
        if done % every == 0 or done == total:
            stored = " stored" if unit == "episodes" else ""
            print(f"{label}: {done}/{total} {unit}{stored}", file=sys.stderr, flush=True)

    yield line
