"""``roll-agent leaderboard serve`` / ``leaderboard export``: the results database as a web page.
They never import torch: they need only the ``[leaderboard]`` extra.

Example:
    $ roll-agent leaderboard export site
    $ roll-agent leaderboard serve --port 8080
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from rollenv.commands.arguments import UsageError, non_negative_int
from rollenv.commands.terminal import labelled_progress
from rollenv.extras import INSTALL_COMMANDS, require_extra

__all__ = [
    "add_leaderboard_command",
    "open_store",
    "run_leaderboard_export",
    "run_leaderboard_serve",
]


def add_leaderboard_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``leaderboard serve`` and ``leaderboard export``."""
    parser = commands.add_parser(
        "leaderboard",
        help="Show the results database as a web page (served, or a static site).",
        description="The leaderboard's page: the ranking per suite, a chart per env, learning "
        "curves of training runs, a page per model and per env, and an episode viewer. "
        f"Needs the [leaderboard] extra: {INSTALL_COMMANDS['leaderboard']}",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve the page on 127.0.0.1")
    serve.add_argument("--db", help="the results database (default as for eval)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=non_negative_int, default=8000, help="port (8000)")
    serve.set_defaults(handler=run_leaderboard_serve)
    export = actions.add_parser("export", help="write the page as a static site")
    export.add_argument("directory", metavar="DIR", help="where DIR/index.html goes")
    export.add_argument("--db", help="the results database (default as for eval)")
    export.set_defaults(handler=run_leaderboard_export)


@contextlib.contextmanager
def open_store(db: str | None) -> Iterator[Any]:
    require_extra("sqlalchemy", "leaderboard")
    from leaderboard.store import ResultStore, StoreError

    try:
        store = ResultStore(db)
    except StoreError as error:
        raise UsageError(str(error)) from None
    try:
        yield store
    except StoreError as error:
        raise UsageError(str(error)) from None
    finally:
        store.close()


def run_leaderboard_serve(args: argparse.Namespace) -> int:
    """``roll-agent leaderboard serve``: the page, rendered per request, until Ctrl-C."""
    require_extra("fastapi", "leaderboard")
    from leaderboard.site import serve_site

    with open_store(args.db) as store:
        print(f"leaderboard of {store.url} at http://{args.host}:{args.port}/", file=sys.stderr)
        try:
            serve_site(store, host=args.host, port=args.port)
        except OSError as error:
            raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    return 0


def run_leaderboard_export(args: argparse.Namespace) -> int:
    """``roll-agent leaderboard export DIR``: the page as files."""
    require_extra("jinja2", "leaderboard")
    from leaderboard.site import export_site

    with open_store(args.db) as store, _page_progress() as progress:
        try:
            index = export_site(store, args.directory, progress=progress)
        except OSError as error:
            raise UsageError(f"cannot write {args.directory}: {error}") from None
    print(f"wrote {index} (open it in a browser; no server needed)")
    return 0


@contextlib.contextmanager
def _page_progress() -> Iterator[Callable[[int, int], None]]:
    """``update(done, total)`` per exported page: a bar on a terminal, else a line per 1000."""
    with contextlib.ExitStack() as stack:
        bars: dict[int, Callable[[str, int], None]] = {}

        def update(done: int, total: int) -> None:
            if total not in bars:
                bars[total] = stack.enter_context(
                    labelled_progress(total, unit="pages", every=1000)
                )
            bars[total]("pages", done)

        yield update
