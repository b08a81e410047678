"""A stdio MCP server process and a client session to it, usable from synchronous code.

The ``mcp`` SDK's client is async (``stdio_client`` + ``ClientSession``); a gym env is not.
``MCPConnection`` runs the session on its own event loop in a dedicated daemon thread and hands
each request to it with ``asyncio.run_coroutine_threadsafe``, so ``call_tool`` is a plain
blocking call. Closing the connection ends the session, which closes the server's stdin; the
SDK then waits for the process to exit (and kills its process tree if it does not) and reaps
it, so no zombie stays behind. Every connection still open at interpreter exit is closed then.

Starting a server costs about a second (the server imports the SDK), so an env that is dropped
without ``close()`` hands its connection to ``release``, which keeps one idle connection per
command for the next env's ``acquire``; ``close()`` stops the server at once.

Example:
    >>> import sys
    >>> connection = acquire((sys.executable, "-m", "environments.mcp_tools.server"))
    >>> connection.call_tool("calculate", {"expression": "6 * 7"})
    ToolResult(text='42', is_error=False)
    >>> connection.close()
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 10.0
CLOSE_TIMEOUT_S = 10.0
# the folder holding the ``environments`` package: the server imports it from there
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class MCPServerError(RuntimeError):
    """The MCP server could not be started or stopped answering."""


@dataclass(frozen=True)
class ToolResult:
    """A tool's text output, and whether the server flagged it as an error."""

    text: str
    is_error: bool


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the server lists it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


class MCPConnection:
    """Starts ``command`` as a stdio MCP server and keeps a client session to it open.

    Args:
        command: the server's executable and arguments.
        env: extra environment variables for the server.
        start_timeout_s: how long the start and the MCP handshake may take.

    Raises:
        MCPServerError: the server did not start or did not complete the handshake.
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.command = tuple(command)
        self._env = {"PYTHONPATH": _PACKAGE_ROOT, **(env or {})}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="mcp-client-loop", daemon=True
        )
        self._thread.start()
        self._ready: concurrent.futures.Future[list[ToolSpec]] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        self._closed = False
        self._main = asyncio.run_coroutine_threadsafe(self._serve(start_timeout_s), self._loop)
        try:
            self.tools = self._ready.result(timeout=start_timeout_s + 5)
        except BaseException as error:
            self._shut_down_loop()
            cause = _innermost(error)
            detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
            if "Connection closed" in detail:
                detail += " (the process exited, or wrote something other than MCP to stdout)"
            raise MCPServerError(
                f"the MCP server {' '.join(self.command)!r} did not start: {detail}"
            ) from error
        _OPEN.add(self)

    @property
    def alive(self) -> bool:
        """Whether the session is still open (the server has not exited or failed)."""
        return not self._closed and not self._main.done()

    def call_tool(
        self, name: str, arguments: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S
    ) -> ToolResult:
        """Calls a tool and waits for its result.

        Raises:
            MCPServerError: the server did not answer in time or the session is closed.
        """
        if not self.alive:
            raise MCPServerError("the MCP server connection is closed")
        future = asyncio.run_coroutine_threadsafe(
            self._session.call_tool(name, arguments, read_timeout_seconds=timeout_s), self._loop
        )
        try:
            result = future.result(timeout=timeout_s + 1)
        except Exception as error:
            future.cancel()
            raise MCPServerError(f"the MCP call {name!r} failed: {error!r}") from error
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return ToolResult(text, bool(result.is_error))

    def close(self) -> None:
        """Ends the session and stops the server process (waits for it to exit)."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        if self._stop is not None and not self._main.done():
            self._loop.call_soon_threadsafe(self._stop.set)
        # it may have failed already, or be torn down at interpreter exit: close regardless
        with contextlib.suppress(BaseException):
            self._main.result(timeout=CLOSE_TIMEOUT_S)
        self._shut_down_loop()

    def _shut_down_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()

    async def _serve(self, start_timeout_s: float) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        self._stop = asyncio.Event()
        parameters = StdioServerParameters(
            command=self.command[0], args=list(self.command[1:]), env=self._env
        )
        try:
            with open(os.devnull, "w") as errlog:
                async with (
                    stdio_client(parameters, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    async with asyncio.timeout(start_timeout_s):
                        await session.initialize()
                        listing = await session.list_tools()
                    self._session = session
                    self._ready.set_result(
                        [
                            ToolSpec(t.name, t.description or "", dict(t.input_schema))
                            for t in listing.tools
                        ]
                    )
                    await self._stop.wait()
        except BaseException as error:
            if not self._ready.done():
                self._ready.set_exception(error)
            raise


def _innermost(error: BaseException) -> BaseException:
    """The first leaf of nested exception groups (anyio's task groups wrap the real error)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


# ---------------------------------------------------------------------------------- the pool
_OPEN: weakref.WeakSet[MCPConnection] = weakref.WeakSet()
_IDLE: dict[tuple[str, ...], MCPConnection] = {}
_POOL_LOCK = threading.Lock()


def acquire(command: Sequence[str]) -> MCPConnection:
    """An idle live connection to ``command``'s server, or a newly started one."""
    with _POOL_LOCK:
        connection = _IDLE.pop(tuple(command), None)
    if connection is not None and connection.alive:
        return connection
    if connection is not None:
        connection.close()
    return MCPConnection(command)


def release(connection: MCPConnection) -> None:
    """Keeps ``connection`` for the next ``acquire`` if none is idle for its command, else
    closes it."""
    if not connection.alive:
        connection.close()
        return
    with _POOL_LOCK:
        if connection.command not in _IDLE:
            _IDLE[connection.command] = connection
            return
    connection.close()


def discard_idle() -> None:
    """Closes the idle connections now (their processes would otherwise wait for reuse)."""
    with _POOL_LOCK:
        idle = list(_IDLE.values())
        _IDLE.clear()
    for connection in idle:
        connection.close()


def close_all() -> None:
    """Closes every open connection, idle or not (runs at interpreter exit)."""
    with _POOL_LOCK:
        _IDLE.clear()
    for connection in list(_OPEN):
        connection.close()


atexit.register(close_all)
