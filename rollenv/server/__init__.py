"""rollenv's env server: every registered env over the network, in sessions.

* :mod:`rollenv.server.sessions`: the sessions (``SessionStore``), one env each.
* :mod:`rollenv.server.protocol`: the wire format, OpenEnv's extended with sessions and env ids.
* :mod:`rollenv.server.http_app`: the HTTP and WebSocket server (FastAPI; ``roll-agent
  serve-env``), which ``openenv-core``'s own client can play.
* :mod:`rollenv.server.mcp_server`: the same envs as MCP tools over stdio (``roll-agent
  serve-env --mcp``).
* :class:`rollenv.RemoteEnv` (:mod:`rollenv.remote`): the client, a ``gymnasium.Env``.

Importing this package loads neither FastAPI nor the MCP SDK; its modules do.

Example:
    >>> from rollenv.server import SessionStore
    >>> SessionStore(max_sessions=8).max_sessions
    8
"""

from rollenv.server.errors import ErrorCode, ServerError
from rollenv.server.sessions import Session, SessionStore, Transition

__all__ = ["ErrorCode", "ServerError", "Session", "SessionStore", "Transition"]
