"""The env server's HTTP and WebSocket app (FastAPI), speaking OpenEnv's protocol with sessions.

Endpoints (the wire format is in :mod:`rollenv.server.protocol`):

* ``POST /reset``: ``{"env_id", "kwargs", "seed", "options", "episode_id"}`` opens a session
  and starts its first episode; with ``"session_id"`` it starts a new episode in that session.
* ``POST /step``: ``{"session_id", "action": {"message": reply}}`` (or ``"action": reply``).
* ``GET /state?session_id=ID``: OpenEnv's state (``episode_id``, ``step_count``) and more.
* ``POST /sessions`` (``{"env_id", "kwargs"}``: a session whose env is made, not reset) and
  ``DELETE /sessions/{id}`` (close it).
* ``GET /health``, ``GET /schema``, ``GET /metadata``, ``GET /envs`` (every registered id).
* ``WebSocket /ws``: OpenEnv's session form; the connection is the session. Its messages are
  ``{"type": "reset", "data": {"env_id": ..., "seed": ...}}``, ``{"type": "step", "data":
  {"message": reply}}``, ``{"type": "state"}`` and ``{"type": "close"}``; a reset naming
  another env replaces the connection's env. This is what ``openenv-core``'s own client
  (``GenericEnvClient``) speaks.

Every error is JSON, ``{"error": {"code", "message", ...}}`` with a 4xx status for the client's
mistakes and 5xx for the server's (over the WebSocket: ``{"type": "error", "data": {...}}``);
the server keeps serving after any of them. Env calls run in a thread pool, never on the event
loop; idle sessions are closed by a background task.

Example:
    >>> from rollenv.server import SessionStore
    >>> app = build_app(SessionStore(max_sessions=4))
    >>> sorted(route.path for route in app.routes if "reset" in route.path or "ws" in route.path)
    ['/reset', '/ws']
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse

import rollenv
from rollenv.server.errors import ErrorCode, ServerError
from rollenv.server.protocol import (
    EpisodeRequest,
    OpenRequest,
    ResetRequest,
    SessionState,
    StepRequest,
    TextAction,
    TextObservation,
    decode_json,
    parse_request,
    transition_reply,
)
from rollenv.server.sessions import SessionStore

__all__ = ["build_app"]

Result = TypeVar("Result")


class _JSONResponse(JSONResponse):
    """JSON as Python writes it: a NaN reward stays a NaN instead of failing the reply.

    The handlers of ``/reset``, ``/step`` and ``/state`` return it themselves: a returned dict
    would first go through FastAPI's response validation and serialisation (a copy of the
    reply, NaN turned to null) before this ``render``, on every request.
    """

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()


class _EnvEndpoints:
    """The server's endpoints over one session store, and what they share: the threads that run
    env calls and the sweep for idle sessions."""

    def __init__(
        self, store: SessionStore, default_env_id: str | None, workers: int, interval: float
    ) -> None:
        self.store = store
        self.default_env_id = default_env_id
        self.interval = interval
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rollenv-env")

    async def run(self, function: Callable[..., Result], *args: Any) -> Result:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(function, *args))

    async def reap_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            with contextlib.suppress(Exception):  # one failed sweep must not end the sweeping
                await self.run(self.store.reap_idle)

    @contextlib.asynccontextmanager
    async def lifespan(self, _: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(self.reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            await self.run(self.store.close_all)
            self.executor.shutdown(wait=False, cancel_futures=True)

    async def server_error(self, _: Request, error: ServerError) -> _JSONResponse:
        return _JSONResponse(error.body(), status_code=error.status)

    async def unexpected_error(self, _: Request, error: Exception) -> _JSONResponse:
        problem = ServerError(500, ErrorCode.INTERNAL_ERROR, f"{type(error).__name__}: {error}")
        return _JSONResponse(problem.body(), status_code=500)

    async def start_episode(
        self, session_id: str | None, request: EpisodeRequest, *, replace: bool
    ) -> dict[str, Any]:
        transition = await self.run(
            functools.partial(
                self.store.start_episode,
                session_id,
                request.env_id,
                request.kwargs,
                seed=request.seed,
                options=request.options,
                episode_id=request.episode_id,
                replace=replace,
                default_env_id=self.default_env_id,
            )
        )
        return transition_reply(transition)

    # ------------------------------------------------------------------ OpenEnv's HTTP form
    async def reset(self, http_request: Request) -> _JSONResponse:
        request = parse_request(ResetRequest, await http_request.body())
        return _JSONResponse(await self.start_episode(request.session_id, request, replace=False))

    async def step(self, http_request: Request) -> _JSONResponse:
        request = parse_request(StepRequest, await http_request.body())
        transition = await self.run(self.store.step, request.session_id, request.reply)
        return _JSONResponse(transition_reply(transition))

    async def state(self, session_id: str | None = None) -> _JSONResponse:
        if session_id is None:
            raise ServerError(
                422,
                ErrorCode.BAD_REQUEST,
                "bad request: session_id: required (GET /state?session_id=ID)",
                problems=["session_id"],
            )
        return _JSONResponse(await self.run(self.store.state, session_id))

    async def open_session(self, http_request: Request) -> dict[str, Any]:
        request = parse_request(OpenRequest, await http_request.body())
        session = await self.run(self.store.open, request.env_id, request.kwargs)
        return {"session_id": session.id, "env_id": session.env_id, "kwargs": session.kwargs}

    async def close_session(self, session_id: str) -> dict[str, Any]:
        await self.run(self.store.close, session_id)
        return {"closed": session_id}

    async def health(self) -> dict[str, Any]:
        return {
            "status": "healthy",
            "sessions": len(self.store),
            "max_sessions": self.store.max_sessions,
        }

    async def schema(self) -> dict[str, Any]:
        return {
            "action": TextAction.model_json_schema(),
            "observation": TextObservation.model_json_schema(),
            "state": SessionState.model_json_schema(),
        }

    async def metadata(self) -> dict[str, Any]:
        return {
            "name": "rollenv",
            "description": "Every registered rollenv environment, in sessions: reset with an "
            "env_id (GET /envs lists them), step with {'message': reply}.",
            "version": rollenv.__version__,
            "default_env_id": self.default_env_id,
        }

    async def envs(self) -> dict[str, Any]:
        return {
            "envs": [
                {
                    "id": spec.id,
                    "family": spec.family,
                    "description": spec.description,
                    "max_episode_steps": spec.max_episode_steps,
                }
                for spec in sorted(rollenv.registry.values(), key=lambda s: s.id)
            ]
        }

    # ------------------------------------------------------------------ OpenEnv's WebSocket form
    async def play(self, websocket: WebSocket) -> None:
        await websocket.accept()
        session_id: str | None = None
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                try:
                    kind, data = _read_ws_message(message.get("text") or message.get("bytes"))
                    if kind == "close":
                        break
                    if kind == "reset":
                        request = parse_request(EpisodeRequest, data)
                        reply = await self.start_episode(session_id, request, replace=True)
                        session_id = reply["session_id"]
                        answer = {"type": "observation", "data": reply}
                    elif session_id is None:
                        raise ServerError(
                            409,
                            ErrorCode.NOT_RESET,
                            f"no episode on this connection yet: send a reset (with an env_id) "
                            f"before a {kind}",
                        )
                    elif kind == "step":
                        action = parse_request(TextAction, data)
                        transition = await self.run(self.store.step, session_id, action.message)
                        answer = {"type": "observation", "data": transition_reply(transition)}
                    else:
                        answer = {
                            "type": "state",
                            "data": await self.run(self.store.state, session_id),
                        }
                except ServerError as error:
                    if session_id is not None and session_id not in self.store:
                        session_id = None  # dropped (its env failed), expired, or replaced
                    answer = {"type": "error", "data": error.body()["error"]}
                await websocket.send_text(json.dumps(answer, ensure_ascii=False))
        except WebSocketDisconnect:
            pass
        finally:
            if session_id is not None:
                # already gone, or the server is stopping (its threads are shut down)
                with contextlib.suppress(ServerError, RuntimeError):
                    await self.run(self.store.close, session_id)


def build_app(
    store: SessionStore,
    *,
    default_env_id: str | None = None,
    workers: int = 8,
    reap_interval: float | None = None,
) -> FastAPI:
    """The FastAPI app serving ``store``'s sessions.

    Args:
        store: the sessions (its ``max_sessions`` and ``idle_timeout`` apply).
        default_env_id: the env of a reset that names none (OpenEnv clients often reset with no
            arguments); ``None``: such a reset is an error.
        workers: threads that run env calls.
        reap_interval: seconds between sweeps for idle sessions (default: a quarter of the
            store's idle timeout, at most 30 s).
    """
    interval = reap_interval or min(store.idle_timeout / 4, 30.0)
    endpoints = _EnvEndpoints(store, default_env_id, workers, interval)
    app = FastAPI(
        title="rollenv env server",
        description="Every registered rollenv environment, in sessions, over OpenEnv's protocol.",
        version=rollenv.__version__,
        lifespan=endpoints.lifespan,
        default_response_class=_JSONResponse,
    )

    app.add_exception_handler(ServerError, endpoints.server_error)
    app.add_exception_handler(Exception, endpoints.unexpected_error)
    # OpenEnv's HTTP form, then its WebSocket form
    for method, path, handler, summary in (
        (
            "POST",
            "/reset",
            endpoints.reset,
            "Open a session and start an episode (or a new one in a session)",
        ),
        ("POST", "/step", endpoints.step, "Play one reply in a session's episode"),
        (
            "GET",
            "/state",
            endpoints.state,
            "A session's state (OpenEnv's episode_id and step_count)",
        ),
        (
            "POST",
            "/sessions",
            endpoints.open_session,
            "Open a session: make its env, without a reset",
        ),
        (
            "DELETE",
            "/sessions/{session_id}",
            endpoints.close_session,
            "Close a session and its env",
        ),
        ("GET", "/health", endpoints.health, "Whether the server is up, and its sessions"),
        (
            "GET",
            "/schema",
            endpoints.schema,
            "JSON schemas of the action, the observation and the state",
        ),
        ("GET", "/metadata", endpoints.metadata, "What this server is"),
        ("GET", "/envs", endpoints.envs, "Every env id a reset may name"),
    ):
        app.add_api_route(path, handler, methods=[method], summary=summary)
    app.add_api_websocket_route("/ws", endpoints.play)
    return app


def _read_ws_message(raw: str | bytes | None) -> tuple[str, dict[str, Any]]:
    """A WebSocket message's type and data, or the ``ServerError`` saying what is wrong."""
    message = decode_json(raw or "")
    if not isinstance(message, dict):
        raise ServerError(
            422, ErrorCode.BAD_REQUEST, 'a message must be an object {"type": ..., "data": ...}'
        )
    kind, data = message.get("type"), message.get("data", {})
    if kind not in ("reset", "step", "state", "close"):
        raise ServerError(
            422,
            ErrorCode.BAD_REQUEST,
            f"unknown message type {kind!r} (allowed: reset, step, state, close)",
        )
    if not isinstance(data, dict):
        raise ServerError(422, ErrorCode.BAD_REQUEST, f"a {kind} message's data must be an object")
    return kind, data
