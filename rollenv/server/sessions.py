"""``SessionStore``: the env server's sessions, each one env made by ``rollenv.make``.

A session is opened with an env id and keyword arguments, addressed by its id, reset and stepped
any number of times, and closed by its client or, once idle for ``idle_timeout`` seconds, by
``reap_idle``. The store is synchronous and thread-safe: the HTTP app calls it from a thread
pool (an env step never runs on the event loop), the MCP server from its worker threads. Each
session has its own lock, so two requests on one session run one after the other while other
sessions step in parallel.

Every mistake is one :class:`~rollenv.server.errors.ServerError`: an unknown id (with the close
matches from rollenv's registry), an env that cannot run here, bad keyword arguments (with the
allowed ones), an unknown or expired session, a full server. An env that raises in ``reset`` or
``step`` costs only its own session, which is dropped.

Example:
    >>> store = SessionStore(max_sessions=4)
    >>> session = store.open("Sokoban-v0")
    >>> first = store.reset(session.id, seed=0)
    >>> store.step(session.id, "<answer>Up</answer>").info["metrics"]["action_is_valid"]
    True
    >>> store.close(session.id)
    >>> try:
    ...     store.open("Sokobn-v0")
    ... except ServerError as error:
    ...     print(error.status, error.code, error.details["close_matches"][0])
    404 UNKNOWN_ENV Sokoban-v0
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

import rollenv
from rollenv.registration import EnvUnavailableError, UnknownEnvError
from rollenv.server.errors import (
    ErrorCode,
    ServerError,
    capacity_reached,
    expired_session,
    not_reset,
    unknown_session,
)

#: How many closed-by-expiry session ids are remembered, to tell "expired" from "unknown".
REMEMBERED_EXPIRED = 4096
#: Keyword arguments ``gymnasium.make`` itself takes, beside the env's own.
GYMNASIUM_MAKE_KWARGS = ("max_episode_steps", "disable_env_checker")


@dataclass(frozen=True)
class Transition:
    """What a reset (``reward`` None, not done) or a step of a session gave, with the
    session's instruction and :meth:`Session.state` right after it."""

    observation: Any
    info: dict[str, Any]
    reward: float | None = None
    terminated: bool = False
    truncated: bool = False
    instruction: str | None = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass(eq=False)
class Session:
    """One env on the server and its episode's bookkeeping (read it under ``lock``)."""

    id: str
    env_id: str
    kwargs: dict[str, Any]
    env: gym.Env
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    instruction: str | None = None
    episode_id: str | None = None
    episodes: int = 0
    step_count: int = 0
    done: bool = False
    closed: bool = False

    def state(self) -> dict[str, Any]:
        """OpenEnv's ``State`` (``episode_id``, ``step_count``) and rollenv's own fields."""
        return {
            "episode_id": self.episode_id,
            "step_count": self.step_count,
            "session_id": self.id,
            "env_id": self.env_id,
            "kwargs": self.kwargs,
            "episodes": self.episodes,
            "done": self.done,
        }


class SessionStore:
    """The sessions of one server, capped in number and closed when idle.

    Args:
        max_sessions: sessions held at once; opening one more is a ``CAPACITY_REACHED`` error.
        idle_timeout: seconds without a request after which ``reap_idle`` closes a session.
        clock: the monotonic clock (seconds) idleness is measured with.
    """

    def __init__(
        self,
        max_sessions: int = 256,
        idle_timeout: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be > 0 seconds, got {idle_timeout}")
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._opening = 0  # slots reserved by opens whose env is still being made
        self._expired: OrderedDict[str, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    # ------------------------------------------------------------------ opening and closing
    def open(self, env_id: str, kwargs: dict[str, Any] | None = None) -> Session:
        """Makes ``rollenv.make(env_id, **kwargs)`` in a new session (not yet reset).

        Raises:
            ServerError: ``UNKNOWN_ENV`` (404), ``ENV_UNAVAILABLE`` (424), ``BAD_ENV_KWARGS``
                (422), ``CAPACITY_REACHED`` (503), or ``ENV_FAILED`` (500) when making it
                raised anything else.
        """
        kwargs = dict(kwargs or {})
        with self._lock:
            if len(self._sessions) + self._opening >= self.max_sessions:
                raise capacity_reached(self.max_sessions, self.idle_timeout)
            self._opening += 1
        try:
            env = make_env(env_id, kwargs)
            session = Session(
                id=uuid.uuid4().hex,
                env_id=rollenv.spec(env_id).id,
                kwargs=kwargs,
                env=env,
                last_used=self._clock(),
            )
            with self._lock:
                self._sessions[session.id] = session
            return session
        finally:
            with self._lock:
                self._opening -= 1

    def close(self, session_id: str) -> None:
        """Closes a session and its env.

        Raises:
            ServerError: ``UNKNOWN_SESSION`` or ``SESSION_EXPIRED``.
        """
        with self._use(session_id, touch=False) as session:
            self._drop(session)

    def close_all(self) -> None:
        """Closes every session (the server is stopping)."""
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            with session.lock:
                if not session.closed:
                    self._drop(session)

    def reap_idle(self) -> list[str]:
        """Closes the sessions idle for ``idle_timeout`` seconds or more; returns their ids.

        A session busy with a request is never reaped.
        """
        deadline = self._clock() - self.idle_timeout
        with self._lock:
            idle = [s for s in self._sessions.values() if s.last_used <= deadline]
        reaped = []
        for session in idle:
            if not session.lock.acquire(blocking=False):
                continue
            try:
                if session.closed or session.last_used > deadline:
                    continue
                self._drop(session)
                reaped.append(session.id)
            finally:
                session.lock.release()
        with self._lock:
            for session_id in reaped:
                self._expired[session_id] = None
            while len(self._expired) > REMEMBERED_EXPIRED:
                self._expired.popitem(last=False)
        return reaped

    # ------------------------------------------------------------------ playing
    def get(self, session_id: str) -> Session:
        """The open session ``session_id``.

        Raises:
            ServerError: ``UNKNOWN_SESSION`` or ``SESSION_EXPIRED``.
        """
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                raise self._missing(session_id)
            return session

    def reset(
        self,
        session_id: str,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        episode_id: str | None = None,
    ) -> Transition:
        """Starts a new episode in the session: ``env.reset(seed=seed, options=options)``.

        Raises:
            ServerError: as :meth:`get`; ``ENV_FAILED`` (500) if the env raised (the session is
                then dropped).
        """
        with self._use(session_id) as session:
            observation, info = self._call(session, "reset", seed=seed, options=options)
            session.episodes += 1
            session.episode_id = episode_id or f"{session.id}-{session.episodes}"
            session.step_count = 0
            session.done = False
            instruction = info.get("instruction") if isinstance(info, dict) else None
            session.instruction = instruction if isinstance(instruction, str) else None
            return Transition(
                observation, info, instruction=session.instruction, state=session.state()
            )

    def start_episode(
        self,
        session_id: str | None,
        env_id: str | None = None,
        kwargs: dict[str, Any] | None = None,
        *,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        episode_id: str | None = None,
        replace: bool = False,
        default_env_id: str | None = None,
    ) -> Transition:
        """Resets ``session_id``, or a session it opens first where none is given.

        Args:
            session_id: the session to reset; ``None``: open one for ``env_id``.
            env_id, kwargs: the env to open (``env_id`` defaults to ``default_env_id``). Given
                with a session that plays another env, they are an error, unless ``replace``:
                then that session is closed and a new one opened.
            seed, options, episode_id: the reset's.

        Raises:
            ServerError: as :meth:`open` and :meth:`reset`; ``BAD_REQUEST`` when no env is
                named, or (without ``replace``) another env than the session's.
        """
        if session_id is not None and (env_id is not None or kwargs):
            session = self.get(session_id)
            same_env = _canonical_id(env_id or session.env_id) == session.env_id
            if not (same_env and (not kwargs or kwargs == session.kwargs)):
                if not replace:
                    raise ServerError(
                        409,
                        ErrorCode.BAD_REQUEST,
                        f"session {session_id!r} plays {session.env_id} with kwargs "
                        f"{session.kwargs}; reset without a session_id to play another env",
                        session_id=session_id,
                    )
                self.close(session_id)
                session_id = None
        if session_id is None:
            env_id = env_id or default_env_id
            if env_id is None:
                raise ServerError(
                    422,
                    ErrorCode.BAD_REQUEST,
                    "bad request: env_id: required to open a session (GET /envs or the "
                    "list_envs tool lists the ids; or start the server with a default env: "
                    "roll-agent serve-env --env ID)",
                    problems=["env_id"],
                )
            self.reap_idle()
            session_id = self.open(env_id, kwargs).id
        return self.reset(session_id, seed, options, episode_id)

    def step(self, session_id: str, reply: str) -> Transition:
        """Plays ``reply`` in the session's episode: ``env.step(reply)``.

        Raises:
            ServerError: as :meth:`get`; ``NOT_RESET`` (409) before the first reset;
                ``ENV_FAILED`` (500) if the env raised (the session is then dropped).
        """
        with self._use(session_id) as session:
            if session.episodes == 0:
                raise not_reset(session_id)
            observation, reward, terminated, truncated, info = self._call(session, "step", reply)
            session.step_count += 1
            session.done = bool(terminated or truncated)
            return Transition(
                observation,
                info,
                reward,
                bool(terminated),
                bool(truncated),
                instruction=session.instruction,
                state=session.state(),
            )

    def state(self, session_id: str) -> dict[str, Any]:
        """The session's :meth:`Session.state`."""
        with self._use(session_id) as session:
            return session.state()

    # ------------------------------------------------------------------ internals
    @contextlib.contextmanager
    def _use(self, session_id: str, touch: bool = True) -> Iterator[Session]:
        session = self.get(session_id)
        with session.lock:
            if session.closed:  # closed while this request waited for the lock
                raise self._missing(session_id)
            try:
                yield session
            finally:
                if touch:
                    session.last_used = self._clock()

    def _call(self, session: Session, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(session.env, method)(*args, **kwargs)
        except Exception as error:
            self._drop(session)
            raise ServerError(
                500,
                ErrorCode.ENV_FAILED,
                f"{session.env_id} raised {type(error).__name__} in {method}: {error}; "
                f"session {session.id!r} is closed",
                session_id=session.id,
            ) from error

    def _drop(self, session: Session) -> None:
        """Removes a session whose lock the caller holds, and closes its env."""
        session.closed = True
        with self._lock:
            self._sessions.pop(session.id, None)
        with contextlib.suppress(Exception):  # an env failing to close must not fail a request
            session.env.close()

    def _missing(self, session_id: str) -> ServerError:
        if session_id in self._expired:
            return expired_session(session_id, self.idle_timeout)
        return unknown_session(session_id)


def make_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """``rollenv.make(env_id, **kwargs)``, its failures as ``ServerError``s (see ``open``)."""
    try:
        return rollenv.make(env_id, **kwargs)
    except UnknownEnvError as error:
        raise ServerError(
            404,
            ErrorCode.UNKNOWN_ENV,
            str(error),
            env_id=env_id,
            close_matches=error.close_matches,
        ) from None
    except EnvUnavailableError as error:
        raise ServerError(
            424, ErrorCode.ENV_UNAVAILABLE, str(error), env_id=env_id, reason=error.reason
        ) from None
    except ImportError as error:
        raise ServerError(
            424,
            ErrorCode.ENV_UNAVAILABLE,
            f"{env_id} cannot be made here: {error}",
            env_id=env_id,
            reason=str(error),
        ) from None
    except Exception as error:
        # a TypeError or ValueError with the client's kwargs is theirs to fix; with none (or
        # any other error) the env itself failed to build
        if kwargs and isinstance(error, TypeError | ValueError):
            allowed = allowed_kwargs(env_id)
            raise ServerError(
                422,
                ErrorCode.BAD_ENV_KWARGS,
                f"bad kwargs {sorted(kwargs)} for {env_id}: {error}"
                + (f" (allowed: {', '.join(allowed)})" if allowed else ""),
                env_id=env_id,
                allowed=allowed,
            ) from None
        raise ServerError(
            500,
            ErrorCode.ENV_FAILED,
            f"making {env_id} raised {type(error).__name__}: {error}",
            env_id=env_id,
        ) from error


def _canonical_id(env_id: str) -> str:
    try:
        return rollenv.spec(env_id).id
    except Exception:  # an unknown id: opening it will say so
        return env_id


def allowed_kwargs(env_id: str) -> list[str]:
    """The keyword arguments ``rollenv.make(env_id, ...)`` accepts, or ``[]`` if unknown."""
    try:
        entry = rollenv.spec(env_id).entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
        parameters = inspect.signature(creator).parameters.values()
    except Exception:  # an id we cannot introspect: the message keeps the env's own words
        return []
    own = [
        p.name
        for p in parameters
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"
    ]
    return sorted(set(own) | set(GYMNASIUM_MAKE_KWARGS))
