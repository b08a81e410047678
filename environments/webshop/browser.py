"""One headless Chromium per process, driven through Playwright from one thread of its own.

Playwright's sync API must be called from the thread that started it, while envs may be stepped
from any thread (the trainer's env managers use thread pools). ``BrowserHost`` therefore runs
Playwright in a dedicated thread and hands it each call. Every env gets its own browser context
(its own cookies and page), so envs share the Chromium process and nothing else.

Chromium is Debian's (``apt-get install -y chromium``), launched with the flags of DESIGN.md;
Playwright's own browser download is never used. ``ROLLENV_CHROMIUM`` overrides the path.

Example:
    >>> host = acquire_browser()  # doctest: +SKIP
    >>> context, page = host.call(host.new_page)  # doctest: +SKIP
    >>> release_browser()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from environments.webshop.deps import require

CHROMIUM_PATH = os.environ.get("ROLLENV_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
T = TypeVar("T")


def check_chromium(path: str = CHROMIUM_PATH) -> None:
    """Raises a clear ``FileNotFoundError`` if Chromium is not installed at ``path``."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"Chromium not found at {path}: install Debian's chromium "
            "(apt-get install -y chromium) or set ROLLENV_CHROMIUM to its path"
        )


class BrowserHost:
    """Playwright and one Chromium, living in a dedicated thread.

    Args:
        executable_path: the Chromium binary.
    """

    def __init__(self, executable_path: str = CHROMIUM_PATH) -> None:
        check_chromium(executable_path)
        require("playwright.sync_api")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshop-browser")
        self._playwright: Any = None
        self.browser: Any = None
        self._doomed: list[Any] = []  # contexts of collected envs, closed at the next call
        try:
            self.call(self._launch, executable_path)
        except BaseException:
            self._executor.shutdown(wait=True)
            raise

    def _launch(self, executable_path: str) -> None:
        sync_api = require("playwright.sync_api")
        self._playwright = sync_api.sync_playwright().start()
        self.browser = self._playwright.chromium.launch(
            executable_path=executable_path, headless=True, args=list(CHROMIUM_FLAGS)
        )

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """Runs ``function(*args)`` in the browser thread and returns its result."""
        return self._executor.submit(self._run, function, args).result()

    def _run(self, function: Callable[..., T], args: tuple[Any, ...]) -> T:
        while self._doomed:
            context = self._doomed.pop()
            with contextlib.suppress(Exception):
                context.close()
        return function(*args)

    def new_page(self) -> tuple[Any, Any]:
        """A fresh context and its page (call it through ``call``)."""
        context = self.browser.new_context()
        return context, context.new_page()

    def close(self) -> None:
        """Closes Chromium and Playwright, then ends the thread."""

        def shut() -> None:
            if self.browser is not None:
                self.browser.close()
            if self._playwright is not None:
                self._playwright.stop()

        try:
            self.call(shut)
        finally:
            self._executor.shutdown(wait=True)
            self.browser = self._playwright = None


_host: BrowserHost | None = None
_users = 0
_lock = threading.Lock()
# (host, context) of envs the garbage collector took: a finalizer may run inside any lock this
# thread holds, so it only appends here; the next acquire or release settles them.
_orphans: list[tuple[BrowserHost, Any]] = []


def forget_context(host: BrowserHost, context: Any) -> None:
    """Gives back a collected env's context; safe in a finalizer (takes no lock)."""
    _orphans.append((host, context))


def _settle_orphans() -> None:  # with _lock held
    global _users
    while _orphans:
        host, context = _orphans.pop()
        if host is _host:
            _users = max(0, _users - 1)
            host._doomed.append(context)


def acquire_browser() -> BrowserHost:
    """The process's browser host, launched on first use; pair with ``release_browser``."""
    global _host, _users
    with _lock:
        _settle_orphans()
        if _host is None:
            _host, _users = BrowserHost(), 0
        _users += 1
        return _host


def release_browser(host: BrowserHost) -> None:
    """Drops one user of ``host``; the last one closes Chromium."""
    global _host, _users
    with _lock:
        _settle_orphans()
        if host is not _host:
            return
        _users = max(0, _users - 1)
        if _users > 0:
            return
        _host = None
    host.close()


def browser_running() -> bool:
    """Whether this process has a Chromium running for WebShop."""
    return _host is not None
