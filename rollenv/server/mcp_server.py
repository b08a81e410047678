"""Every registered env as MCP tools, over stdio (``roll-agent serve-env --mcp``).

The tools, built with the official ``mcp`` SDK's ``MCPServer``:

* ``list_envs(family=None)``: the ids a reset may name, with family and description.
* ``reset(env_id, seed=None, kwargs=None, options=None, session_id=None)``: opens a session
  and starts an episode (or a new episode in ``session_id``); returns the same reply as the HTTP
  server (:func:`rollenv.server.protocol.transition_reply`): ``observation`` (``text``,
  ``instruction``, ``metrics``, ``info``), ``reward``, ``done``, ``terminated``, ``truncated``,
  ``session_id``...
* ``step(session_id, reply)``: plays the agent's reply.
* ``instruction(env_id=None, session_id=None)``: the rules, for a system prompt.
* ``close(session_id)``: ends a session.

A mistake (an unknown id, an unknown session...) is a tool error whose text starts with the
server's error code (``UNKNOWN_ENV: No rollenv environment with id ...``); the server keeps
serving. Sessions are capped and closed when idle, as over HTTP.

Example:
    >>> import asyncio
    >>> from rollenv.server import SessionStore
    >>> server = build_mcp_server(SessionStore())
    >>> sorted(tool.name for tool in asyncio.run(server.list_tools()))
    ['close', 'instruction', 'list_envs', 'reset', 'step']
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

import rollenv
from rollenv.server.errors import ErrorCode, ServerError
from rollenv.server.protocol import transition_reply
from rollenv.server.sessions import SessionStore, make_env

__all__ = ["build_mcp_server", "serve_mcp_stdio"]

_INSTRUCTIONS = (
    "Text environments for LLM agents. Call list_envs to see the ids, reset with an env_id to "
    "open a session (keep its session_id), then step with your reply in the env's answer "
    "format (the instruction says which) until done is true; close the session at the end."
)


def build_mcp_server(store: SessionStore, default_env_id: str | None = None) -> MCPServer:
    """An ``MCPServer`` whose tools play ``store``'s sessions (see the module docstring);
    ``default_env_id`` is the env of a reset that names none."""
    # warnings only: the SDK logs every failed tool call (a client's typo) at INFO on stderr
    server: MCPServer = MCPServer(name="rollenv", instructions=_INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="The env ids a reset may name (optionally of one family).")
    def list_envs(family: str | None = None) -> dict[str, Any]:
        specs = sorted(rollenv.registry.values(), key=lambda s: s.id)
        return {
            "envs": [
                {"id": spec.id, "family": spec.family, "description": spec.description}
                for spec in specs
                if family is None or spec.family == family
            ]
        }

    @server.tool(
        description="Open a session for env_id and start an episode (or a new episode in "
        "session_id). Returns the observation (text, instruction, metrics, info) and the "
        "session_id that step needs."
    )
    def reset(
        env_id: str | None = None,
        seed: int | None = None,
        kwargs: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        if seed is not None and seed < 0:
            raise ToolError(f"{ErrorCode.BAD_REQUEST}: seed must be 0 or more, got {seed}")
        with _as_tool_error():
            transition = store.start_episode(
                session_id,
                env_id,
                kwargs,
                seed=seed,
                options=options,
                default_env_id=default_env_id,
            )
        return transition_reply(transition)

    @server.tool(description="Play one reply (your whole answer text) in a session's episode.")
    def step(session_id: str, reply: str) -> dict[str, Any]:
        with _as_tool_error():
            return transition_reply(store.step(session_id, reply))

    @server.tool(description="The rules and answer format of a session's env, or of an env id.")
    def instruction(env_id: str | None = None, session_id: str | None = None) -> str:
        with _as_tool_error():
            if session_id is not None:
                text = store.get(session_id).instruction
                if text is None:
                    raise ServerError(
                        409, ErrorCode.NOT_RESET, f"reset session {session_id!r} first"
                    )
                return text
            if env_id is None:
                raise ServerError(422, ErrorCode.BAD_REQUEST, "name an env_id or a session_id")
            return _instruction_of(env_id)

    @server.tool(description="End a session and free its env.")
    def close(session_id: str) -> dict[str, Any]:
        with _as_tool_error():
            store.close(session_id)
        return {"closed": session_id}

    return server


def serve_mcp_stdio(store: SessionStore, default_env_id: str | None = None) -> None:
    """Serves the MCP tools over this process's stdin and stdout until the client leaves."""
    try:
        build_mcp_server(store, default_env_id).run("stdio")
    finally:
        store.close_all()


def _instruction_of(env_id: str) -> str:
    env = make_env(env_id, {})
    try:
        _, info = env.reset(seed=0)
    finally:
        env.close()
    return str(info.get("instruction", ""))


@contextlib.contextmanager
def _as_tool_error() -> Iterator[None]:
    try:
        yield
    except ServerError as error:
        raise ToolError(f"{error.code}: {error.message}") from None
