"""``roll-agent serve-env``: every registered env over HTTP (OpenEnv's protocol) or MCP.

``roll-agent serve-env [--host 127.0.0.1] [--port 8000]`` serves every registered env id, in
sessions, over HTTP and WebSocket (see :mod:`rollenv.server.http_app`): ``openenv-core``'s
client and :class:`rollenv.RemoteEnv` play them. ``roll-agent serve-env --mcp`` serves the same
envs as MCP tools over stdin/stdout (see :mod:`rollenv.server.mcp_server`), for an MCP client
that starts the command itself.

Example:
    $ roll-agent serve-env --port 8000
    $ roll-agent serve-env --env Sokoban-v0      # resets that name no env play Sokoban-v0
    $ roll-agent serve-env --mcp
"""

from __future__ import annotations

import argparse
import sys

from rollenv.commands.arguments import UsageError, non_negative_int, positive_int
from rollenv.extras import require_extra

__all__ = ["add_serve_env_command", "run_serve_env"]


def add_serve_env_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``serve-env`` to ``roll-agent``'s subcommands."""
    parser = commands.add_parser(
        "serve-env",
        help="Serve every env over HTTP (OpenEnv's protocol) or as MCP tools.",
        description="Serve every registered env, in sessions: over HTTP and WebSocket in "
        "OpenEnv's protocol (POST /reset with an env_id, POST /step, GET /state, /ws; "
        "openenv-core's client and rollenv.RemoteEnv play them), or with --mcp as MCP tools "
        "(list_envs, reset, step, instruction, close) over stdin/stdout. "
        "Needs the [envserver] extra: pip install 'rollenv[envserver]'",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument(
        "--port", type=non_negative_int, default=8000, help="port (8000; 0 picks a free one)"
    )
    parser.add_argument(
        "--mcp", action="store_true", help="serve MCP tools over stdin/stdout instead of HTTP"
    )
    parser.add_argument(
        "--env",
        metavar="ENV",
        help="the env of a reset that names none (OpenEnv clients often reset with no arguments)",
    )
    parser.add_argument(
        "--max-sessions", type=positive_int, default=256, help="sessions held at once (256)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=600.0,
        metavar="SECONDS",
        help="close a session after this long without a request (600)",
    )
    parser.add_argument(
        "--workers", type=positive_int, default=8, help="threads that run env steps (8)"
    )
    parser.set_defaults(handler=run_serve_env)


def run_serve_env(args: argparse.Namespace) -> int:
    """``roll-agent serve-env``: serves until Ctrl-C (HTTP) or until the MCP client leaves."""
    import rollenv
    from rollenv.server import SessionStore

    store = SessionStore(max_sessions=args.max_sessions, idle_timeout=args.idle_timeout)
    default_env = None
    if args.env is not None:
        try:
            default_env = rollenv.spec(args.env).id
        except rollenv.UnknownEnvError as error:
            raise UsageError(str(error)) from None
    if args.mcp:
        require_extra("mcp", "envserver")
        from rollenv.server.mcp_server import serve_mcp_stdio

        # stdout is the MCP transport: the greeting goes to stderr
        count = len(rollenv.registry)
        print(f"Serving {count} rollenv environments as MCP tools on stdio", file=sys.stderr)
        serve_mcp_stdio(store, default_env)
        return 0
    require_extra("fastapi", "envserver")
    require_extra("uvicorn", "envserver")
    from rollenv.server.http_app import build_app
    from rollenv.server.serving import listening_socket, serve_forever

    try:
        sock = listening_socket(args.host, args.port)
    except OSError as error:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error}") from None
    host, port = sock.getsockname()[:2]
    print(
        f"Serving {len(rollenv.registry)} rollenv environments at http://{host}:{port} "
        "(OpenEnv: POST /reset, POST /step, GET /state, WebSocket /ws; GET /envs lists the ids; "
        "Ctrl-C stops)",
        flush=True,
    )
    serve_forever(build_app(store, default_env_id=default_env, workers=args.workers), sock)
    return 0


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value
