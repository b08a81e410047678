"""The static site: every page written to a folder, with relative links only, so
``DIR/index.html`` opens from ``file://`` and the folder can be hosted anywhere.

Example:
    >>> import tempfile
    >>> from leaderboard.site.catalog import Catalog
    >>> class Empty:
    ...     def suites(self): return []
    ...     def training_runs(self): return {}
    ...     def rated_games(self): return []
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     index = export_site(Empty(), folder)
    ...     index.name, sorted(p.name for p in (index.parent / "static").iterdir())
    ('index.html', ['sort.js', 'style.css', 'viewer.js'])
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from leaderboard.site.catalog import ResultReader
from leaderboard.site.pages import Site
from leaderboard.site.paths import INDEX

__all__ = ["export_site", "write_static"]


def export_site(
    store: ResultReader,
    directory: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Writes the whole site for ``store`` under ``directory`` (created if missing; files of
    an earlier export are overwritten, others left alone).

    Args:
        store: the results to show.
        directory: where ``index.html`` and the other pages go.
        progress: called with (pages written, pages in all) after each page, for a progress
            bar: a board of several models on ``core`` has thousands of episode pages.

    Returns:
        The path of ``index.html``.
    """
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    write_static(root / "static")
    site = Site(store)
    pages = list(site.paths())
    for done, path in enumerate(pages, start=1):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(site.render(path), encoding="utf-8")
        if progress is not None:
            progress(done, len(pages))
    return root / INDEX


def write_static(folder: Path) -> None:
    """Copies the stylesheet and scripts the pages link to into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for item in files("leaderboard.site").joinpath("static").iterdir():
        if item.is_file():
            (folder / item.name).write_bytes(item.read_bytes())
