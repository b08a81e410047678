"""The leaderboard's page: the ranking of every suite, a chart per env, learning curves of
training runs, a page per model and per env, and an episode viewer; served from the store
(``serve_site``, ``make_app``) or exported as a static site (``export_site``).

Example:
    >>> import tempfile
    >>> from leaderboard.site import export_site
    >>> class Empty:
    ...     def suites(self): return []
    ...     def training_runs(self): return {}
    ...     def rated_games(self): return []
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     "No results yet" in export_site(Empty(), folder).read_text()
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from leaderboard.site.export import export_site

if TYPE_CHECKING:
    from fastapi import FastAPI

    from leaderboard.site.catalog import ResultReader

__all__ = ["export_site", "make_app", "serve_site"]


def make_app(store: ResultReader) -> FastAPI:
    """The site as a FastAPI app, each page rendered from ``store`` when asked for."""
    from leaderboard.site.server import make_app as build

    return build(store)


def serve_site(store: ResultReader, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serves the site on ``host:port`` with uvicorn until interrupted (Ctrl-C).

    Raises:
        OSError: the address cannot be listened on (checked before uvicorn starts).
    """
    from leaderboard.site.server import serve_site as run

    run(store, host, port)
