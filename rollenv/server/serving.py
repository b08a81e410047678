"""Running the env server's HTTP app with uvicorn: until Ctrl-C, or in a background thread.

Example:
    >>> import httpx
    >>> from rollenv.server import SessionStore
    >>> from rollenv.server.http_app import build_app
    >>> with serve_in_thread(build_app(SessionStore())) as base_url:
    ...     httpx.get(f"{base_url}/health").json()["status"]
    'healthy'
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

from fastapi import FastAPI

__all__ = ["listening_socket", "serve_forever", "serve_in_thread"]


def listening_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A bound, listening TCP socket (``port=0``: a free one, read back with ``getsockname``).

    Binding first makes a taken port an ``OSError`` for the caller, not uvicorn's exit.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto named: asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP, and
    # without it every keep-alive reply waits 40 ms for the client's delayed ACK (Nagle)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def _server(app: FastAPI) -> object:
    import uvicorn

    # no access log: a line per request costs more than a Sokoban step
    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))


def serve_forever(app: FastAPI, sock: socket.socket) -> None:
    """Serves ``app`` on the listening ``sock`` until Ctrl-C (then closes every session).

    Raises:
        KeyboardInterrupt: after a graceful stop by Ctrl-C or SIGTERM. uvicorn raises the
            signal again once it has stopped, but asyncio turns that into an exception only
            if the signal lands before the server's task has returned; under load it may not,
            and the command would exit 0 instead of 130.
    """
    server = _server(app)
    stopping_signals: list[int] = []
    handle_exit = server.handle_exit  # type: ignore[attr-defined]

    def record_and_stop(sig: int, frame: object) -> None:
        stopping_signals.append(sig)
        handle_exit(sig, frame)

    server.handle_exit = record_and_stop  # type: ignore[attr-defined]
    server.run(sockets=[sock])  # type: ignore[attr-defined]
    if stopping_signals:
        raise KeyboardInterrupt


@contextlib.contextmanager
def serve_in_thread(app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serves ``app`` from a background thread; yields its base URL, stops on exit.

    Raises:
        RuntimeError: the server did not start within 30 seconds.
    """
    sock = listening_socket(host, port)
    server = _server(app)
    thread = threading.Thread(
        target=server.run,  # type: ignore[attr-defined]
        kwargs={"sockets": [sock]},
        name="rollenv-env-server",
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:  # type: ignore[attr-defined]
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the env server did not start")
        time.sleep(0.01)
    bound_host, bound_port = sock.getsockname()[:2]
    try:
        yield f"http://{bound_host}:{bound_port}"
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
        thread.join(timeout=30)
        sock.close()
