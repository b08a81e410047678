"""``ServerError``: one clear error of the env server, with its HTTP status and a stable code.

Every problem a client can cause (an unknown env id, a malformed request, an unknown session)
and every failure of an env becomes one ``ServerError``. The HTTP app answers it with
``status`` and the JSON body ``{"error": {"code": ..., "message": ..., <details>}}``; the
WebSocket and MCP forms send the same code and message.

Example:
    >>> error = unknown_session("abc")
    >>> error.status, str(error.code)
    (404, 'UNKNOWN_SESSION')
    >>> error.body()["error"]["message"]
    "no session 'abc' on this server (it was closed, or never opened)"
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """What went wrong, as clients match it (the message is for people)."""

    INVALID_JSON = "INVALID_JSON"
    BAD_REQUEST = "BAD_REQUEST"
    UNKNOWN_ENV = "UNKNOWN_ENV"
    ENV_UNAVAILABLE = "ENV_UNAVAILABLE"
    BAD_ENV_KWARGS = "BAD_ENV_KWARGS"
    UNKNOWN_SESSION = "UNKNOWN_SESSION"
    SESSION_EXPIRED = "SESSION_EXPIRED"
    NOT_RESET = "NOT_RESET"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    ENV_FAILED = "ENV_FAILED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class ServerError(Exception):
    """A request the server cannot serve.

    Args:
        status: the HTTP status (4xx: the client's mistake; 5xx: the server's or an env's).
        code: the stable error code.
        message: one line saying what is wrong and, where possible, what to do.
        **details: JSON-safe extras for the body (``close_matches``, ``allowed``...).
    """

    def __init__(self, status: int, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details

    def body(self) -> dict[str, Any]:
        """The JSON body of the HTTP reply."""
        return {"error": {"code": str(self.code), "message": self.message, **self.details}}


def unknown_session(session_id: str) -> ServerError:
    return ServerError(
        404,
        ErrorCode.UNKNOWN_SESSION,
        f"no session {session_id!r} on this server (it was closed, or never opened)",
        session_id=session_id,
    )


def expired_session(session_id: str, idle_timeout: float) -> ServerError:
    return ServerError(
        410,
        ErrorCode.SESSION_EXPIRED,
        f"session {session_id!r} expired after {idle_timeout:g} s without a request; "
        "reset without a session_id to open a new one",
        session_id=session_id,
    )


def not_reset(session_id: str) -> ServerError:
    return ServerError(
        409,
        ErrorCode.NOT_RESET,
        f"session {session_id!r} has no episode yet: reset it before stepping",
        session_id=session_id,
    )


def capacity_reached(max_sessions: int, idle_timeout: float) -> ServerError:
    return ServerError(
        503,
        ErrorCode.CAPACITY_REACHED,
        f"the server holds {max_sessions} sessions, its maximum: close one "
        f"(DELETE /sessions/<id>) or wait for idle ones to expire (after {idle_timeout:g} s)",
        max_sessions=max_sessions,
    )
