"""``print_table``: the table every benchmark prints, with rich where it is installed.

The benchmarks run as scripts (``python benchmarks/<name>.py``), so they import this module by
its bare name.

Example:
    >>> from table import print_table
    >>> print_table(["engine", "tokens/s"], [["ours", "12.5"]], "demo", rich=False)
    demo
    engine  tokens/s
    ours        12.5
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["print_table"]


def print_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    title: str,
    *,
    left_columns: int = 1,
    rich: bool = True,
) -> None:
    """Prints ``rows`` under ``header``: the first ``left_columns`` columns left-aligned, the
    rest right-aligned; as plain aligned text when rich is missing (or ``rich=False``)."""
    lines = [list(header), *(list(cells) for cells in rows)]
    widths = [max(len(cells[i]) for cells in lines) for i in range(len(header))]
    try:
        if not rich:
            raise ImportError
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
    except ImportError:
        print(title)
        for cells in lines:
            print(
                "  ".join(
                    cell.ljust(w) if i < left_columns else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
                ).rstrip()
            )
        return
    table = Table(title=title)
    for index, heading in enumerate(header):
        table.add_column(heading, justify="left" if index < left_columns else "right", no_wrap=True)
    for cells in lines[1:]:
        table.add_row(*(escape(cell) for cell in cells))  # "[bench]" is not rich markup
    Console(width=max(sum(widths) + 3 * len(widths) + 1, len(title))).print(table)
