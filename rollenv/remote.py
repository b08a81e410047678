"""``RemoteEnv``: an env on a rollenv env server, used exactly like a local one.

``RemoteEnv(base_url, env_id, **kwargs)`` opens a session on a server started with
``roll-agent serve-env`` (the env is made there by ``rollenv.make(env_id, **kwargs)``), and is a
``gymnasium.Env[str, str]``: ``reset`` and ``step`` return what the local env would, the same
observations, rewards, flags and ``info`` for the same seed and the same replies, with
``info["instruction"]`` and ``info["metrics"]`` as a local env gives them (``info`` is JSON on the
way: a tuple in a local info arrives as a list). One HTTP connection is kept alive for all of
the env's requests. ``close()`` ends the server's session.

An unknown id raises ``rollenv.UnknownEnvError`` (with the server's close matches), an id the
server cannot run ``EnvUnavailableError``, as ``rollenv.make`` does; every other failure is a
:class:`RemoteEnvError` naming the server's error code. A session the server closed for
idleness is reopened by the next ``reset``.

Example:
    >>> import rollenv
    >>> from rollenv.server import SessionStore
    >>> from rollenv.server.http_app import build_app
    >>> from rollenv.server.serving import serve_in_thread
    >>> with serve_in_thread(build_app(SessionStore())) as url:
    ...     with RemoteEnv(url, "Sokoban-v0") as env:
    ...         remote, _ = env.reset(seed=3)
    ...         _, reward, *_ = env.step("<answer>Up</answer>")
    >>> local = rollenv.make("Sokoban-v0")
    >>> remote == local.reset(seed=3)[0], reward == local.step("<answer>Up</answer>")[1]
    (True, True)
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any, ClassVar

import gymnasium as gym

from rollenv.registration import EnvUnavailableError, UnknownEnvError
from rollenv.text_env import text_space

try:
    import httpx
except ImportError as error:  # pragma: no cover - httpx comes with the [envserver] extra
    raise ImportError(
        f"rollenv.RemoteEnv needs httpx ({error}); install it: pip install 'rollenv[envserver]'"
    ) from None

__all__ = ["RemoteEnv", "RemoteEnvError"]

#: Error codes after which the session is gone, so a reset may open a new one.
_SESSION_GONE = ("UNKNOWN_SESSION", "SESSION_EXPIRED")


class RemoteEnvError(RuntimeError):
    """The env server refused a request or could not be reached.

    Attributes:
        status: the HTTP status, or ``None`` when the server could not be reached.
        code: the server's error code (``"UNKNOWN_SESSION"``, ``"ENV_FAILED"``...), or
            ``"UNREACHABLE"``.
    """

    def __init__(self, message: str, status: int | None, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class RemoteEnv(gym.Env[str, str]):
    """A rollenv env played on an env server (see the module docstring).

    Args:
        base_url: the server, e.g. ``"http://127.0.0.1:8000"``.
        env_id: the id to make there, as ``rollenv.make`` takes it.
        request_timeout: seconds to wait for each reply of the server.
        **kwargs: ``rollenv.make``'s keyword arguments, as JSON values.

    Raises:
        UnknownEnvError: the server has no such id.
        EnvUnavailableError: the server knows the id but cannot run it.
        RemoteEnvError: any other refusal (bad kwargs, a full server) or no server there.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, base_url: str, env_id: str, *, request_timeout: float = 60.0, **kwargs: Any):
        self.base_url = base_url.rstrip("/")
        self.env_id = env_id
        self.kwargs = kwargs
        self.render_mode = "ansi" if kwargs.get("render_mode") == "ansi" else None
        self.observation_space = text_space()
        self.action_space = text_space()
        # TCP_NODELAY: a request's headers and body must not wait for a delayed ACK
        no_delay = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = httpx.HTTPTransport(socket_options=[no_delay])
        self._client = httpx.Client(
            base_url=self.base_url, timeout=request_timeout, transport=transport
        )
        self._last_observation = ""
        self.session_id: str | None = None
        try:
            self._open()
        except BaseException:
            self._client.close()
            raise

    # ------------------------------------------------------------------ gymnasium's interface
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        body = {"session_id": self._session(), "seed": seed, "options": options}
        try:
            reply = self._post("/reset", body)
        except RemoteEnvError as error:
            if error.code not in _SESSION_GONE:
                raise
            self._open()  # the server closed the idle session: play on in a new one
            reply = self._post("/reset", {**body, "session_id": self.session_id})
        self._last_observation = reply["observation"]["text"]
        return self._last_observation, reply["observation"]["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not isinstance(action, str):
            raise TypeError(f"a RemoteEnv's action is the reply text, got {type(action).__name__}")
        reply = self._post("/step", {"session_id": self._session(), "action": action})
        observation = reply["observation"]
        self._last_observation = observation["text"]
        return (
            self._last_observation,
            reply["reward"],
            reply["terminated"],
            reply["truncated"],
            observation["info"],
        )

    def render(self) -> str:
        """The last observation text (Gymnasium's ``ansi`` mode)."""
        return self._last_observation

    def close(self) -> None:
        """Ends the server's session and the connection; closing twice is harmless."""
        if self.session_id is not None and not self._client.is_closed:
            session_id, self.session_id = self.session_id, None
            # already gone (expired) or the server stopped: nothing is left to end
            with contextlib.suppress(RemoteEnvError):
                self._request("DELETE", f"/sessions/{session_id}")
        self._client.close()
        super().close()

    # ------------------------------------------------------------------ the wire
    def _open(self) -> None:
        reply = self._post("/sessions", {"env_id": self.env_id, "kwargs": self.kwargs})
        self.session_id = reply["session_id"]

    def _session(self) -> str:
        if self.session_id is None:
            raise RemoteEnvError("this RemoteEnv is closed", None, "CLOSED")
        return self.session_id

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", path, body)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            response = self._client.request(method, path, json=body)
        except TypeError as error:
            raise TypeError(f"the request to {path} is not JSON ({error})") from None
        except httpx.HTTPError as error:
            raise RemoteEnvError(
                f"cannot reach the env server at {self.base_url}: {error}", None, "UNREACHABLE"
            ) from None
        if response.is_success:
            return response.json()
        raise _server_error(response, self.env_id)


def _server_error(response: httpx.Response, env_id: str) -> Exception:
    """The exception a local env would raise for the server's error reply."""
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message, error = "HTTP_ERROR", response.text[:500], {}
    if code == "UNKNOWN_ENV":
        return UnknownEnvError(message)
    if code == "ENV_UNAVAILABLE":
        return EnvUnavailableError(env_id, str(error.get("reason", message)))
    return RemoteEnvError(
        f"the env server answered {response.status_code} {code}: {message}",
        response.status_code,
        code,
    )
