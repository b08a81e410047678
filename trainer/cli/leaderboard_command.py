"""``roll-agent leaderboard serve`` / ``leaderboard export``: the results database as a web page.
They never import torch: they need only the ``[leaderboard]`` extra. ``leaderboard rate`` plays
round-robin matches of a two-player game and rates the players (a model player needs the
``[train]`` extra).

Example:
    $ roll-agent leaderboard export site
    $ roll-agent leaderboard serve --port 8080
    $ roll-agent leaderboard rate textarena/TicTacToe-v0 random solver --games 10
    $ roll-agent leaderboard rate textarena/TicTacToe-v0 solver openai:http://127.0.0.1:8000/v1#tiny-random
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from rollenv.commands.arguments import UsageError, non_negative_int
from rollenv.commands.terminal import labelled_progress
from rollenv.extras import INSTALL_COMMANDS, require_extra

#: How often ``leaderboard rate`` stores the games that ended (each store rates them again).
STORE_EVERY_S = 10.0

__all__ = [
    "add_leaderboard_command",
    "open_store",
    "run_leaderboard_export",
    "run_leaderboard_rate",
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
    rate = actions.add_parser(
        "rate",
        help="play round-robin matches of a two-player game and rate the players",
        description="Every ordered pair of PLAYERs meets --games times (seeds 0..N-1); each "
        "game is stored with every move as it ends (Ctrl-C keeps the games that ended), and "
        "the game's players are rated again from all its matches (OpenSkill: mu, and mu +- 2 "
        "sigma).",
    )
    rate.add_argument("game", help="a multi-agent id, e.g. textarena/TicTacToe-v0")
    rate.add_argument(
        "players",
        nargs="+",
        metavar="PLAYER",
        help="random, solver, a model (a checkpoint's model folder, or tiny-random), or a "
        "served model, openai:http://HOST:PORT/v1#MODEL_ID",
    )
    rate.add_argument(
        "--tokenizer", help="the openai: players' tokenizer (default: each one's model id)"
    )
    rate.add_argument(
        "--games", type=non_negative_int, default=10, help="games per ordered pair (10)"
    )
    rate.add_argument(
        "--kwargs",
        type=_json_object,
        default={},
        metavar="JSON",
        help="the game's keyword arguments as a JSON object, e.g. the answer format the "
        'models were trained with: \'{"answer_format": {"tag": null}}\'',
    )
    rate.add_argument("--db", help="the results database (default as for eval)")
    rate.set_defaults(handler=run_leaderboard_rate)


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


def _json_object(text: str) -> dict[str, Any]:
    """``--kwargs``: a JSON object, or a usage error saying what was wrong."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise argparse.ArgumentTypeError(f"not JSON ({error}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object {{...}}, got {text!r}")
    return value


def run_leaderboard_rate(args: argparse.Namespace) -> int:
    """``roll-agent leaderboard rate GAME PLAYER...``: the matches, stored as they end, and the
    ratings (an interrupted round robin keeps the games that ended)."""
    from rollenv import UnknownEnvError
    from trainer.evaluation.tournament import round_robin, seat_policy

    pairs = len(args.players) * (len(args.players) - 1)
    with open_store(args.db) as store, labelled_progress(pairs * args.games, "games") as progress:
        played = stored = 0
        ended: list[Any] = []
        last_stored = time.monotonic()

        def store_ended() -> None:
            nonlocal stored, last_stored
            if ended:
                store.add_matches(ended)
                stored += len(ended)
                ended.clear()
            last_stored = time.monotonic()

        def one_more(record: Any) -> None:
            nonlocal played
            played += 1
            progress(" vs ".join(record.players), played)
            ended.append(record)
            if time.monotonic() - last_stored >= STORE_EVERY_S:
                store_ended()

        try:
            round_robin(
                args.game,
                args.players,
                args.games,
                env_kwargs=args.kwargs,
                make_player=functools.partial(seat_policy, tokenizer=args.tokenizer),
                on_match=one_more,
            )
        except (ValueError, UnknownEnvError) as error:
            raise UsageError(str(error)) from None
        except KeyboardInterrupt:
            store_ended()
            print(
                f"\n{stored} of {pairs * args.games} games of {args.game} stored in {store.url}",
                file=sys.stderr,
            )
            raise
        store_ended()
        table = store.ratings(args.game)
    print(f"{stored} games of {args.game} stored in {store.url}")
    print(f"{'player':<40} {'mu':>7} {'mu +- 2 sigma':>17} {'games':>6}")
    for rating in table:
        low, high = rating.interval
        print(f"{rating.player:<40} {rating.mu:>7.2f} {low:>8.2f}..{high:<7.2f} {rating.games:>6}")
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
