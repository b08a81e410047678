"""WebShop's website: a FastAPI app rendering the page state machine with Jinja templates.

Every session (one per env, or one per visitor) has its own ``Shop``. Routes:

* ``GET /``: a new session with a random instruction, for a person shopping by hand;
* ``GET /s/{session}/reset?goal=N``: (re)starts that session on goal number ``N``;
* ``GET /s/{session}``: the current page;
* ``GET /s/{session}/search?query=...`` and ``GET /s/{session}/click?label=...``: actions;
  each redirects back to the page (unavailable actions change nothing).

``ShopServer`` runs the app under uvicorn in a thread on 127.0.0.1 (a free port by default);
``acquire_server``/``release_server`` share one server per catalog among a process's envs.

A person can shop on it::

    python -m environments.webshop.server --port 8000   # then open http://127.0.0.1:8000/

Example:
    >>> import urllib.request
    >>> from environments.webshop.data import shop_data
    >>> server = ShopServer(shop_data(num_products=100)).start()
    >>> page = urllib.request.urlopen(server.url + "/").read().decode()
    >>> "search-input" in page
    True
    >>> server.stop()
"""

from __future__ import annotations

import argparse
import random
import secrets
import socket
import threading
from pathlib import Path
from typing import Any

from environments.webshop.data import ShopData, shop_data
from environments.webshop.deps import require
from environments.webshop.difficulty import DEFAULT_DIFFICULTY, DIFFICULTIES
from environments.webshop.pages import Shop

TEMPLATES = Path(__file__).parent / "templates"
STARTUP_TIMEOUT_S = 30.0


def create_app(data: ShopData, sessions: dict[str, Shop] | None = None) -> Any:
    """Builds the FastAPI app serving ``data``; ``sessions`` maps session ids to shops."""
    fastapi = require("fastapi")
    responses = require("fastapi.responses")
    jinja2 = require("jinja2")
    templates = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, trim_blocks=True
    )
    page_template = templates.get_template("page.html")
    sessions = {} if sessions is None else sessions
    app = fastapi.FastAPI(title="WebShop", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.sessions = sessions

    def redirect(session: str) -> Any:
        return responses.RedirectResponse(f"/s/{session}", status_code=303)

    def shop_of(session: str) -> Shop:
        shop = sessions.get(session)
        if shop is None:
            raise fastapi.HTTPException(404, "no such session; open / for a new one")
        return shop

    @app.get("/")
    async def new_visitor() -> Any:
        session = secrets.token_hex(8)
        sessions[session] = Shop(data.catalog, data.index, data.goal(random.getrandbits(62)))
        return redirect(session)

    @app.get("/s/{session}/reset")
    async def reset(session: str, goal: int = 0) -> Any:
        sessions[session] = Shop(data.catalog, data.index, data.goal(goal))
        return redirect(session)

    @app.get("/s/{session}", response_class=responses.HTMLResponse)
    async def page(session: str) -> Any:
        shop = shop_of(session)
        return page_template.render(shop=shop, base=f"/s/{session}")

    @app.get("/s/{session}/search")
    async def search(session: str, query: str = "") -> Any:
        shop = shop_of(session)
        action = shop.resolve("search", query)
        if action is not None:
            shop.apply(action)
        return redirect(session)

    @app.get("/s/{session}/click")
    async def click(session: str, label: str = "") -> Any:
        shop = shop_of(session)
        action = shop.resolve("click", label)
        if action is not None and shop.page != "done":
            shop.apply(action)
        return redirect(session)

    return app


class ShopServer:
    """The app under uvicorn in a background thread, on ``host:port`` (``port=0``: a free one).

    Args:
        data: the catalog, index and goals to serve.
        host: the address to listen on.
        port: the port, or 0 for a free one.
    """

    def __init__(self, data: ShopData, host: str = "127.0.0.1", port: int = 0) -> None:
        self.data = data
        self.host = host
        self.port = port
        self.sessions: dict[str, Shop] = {}
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> ShopServer:
        """Starts serving and returns once the server accepts connections."""
        uvicorn = require("uvicorn")
        started = threading.Event()

        class _Server(uvicorn.Server):
            async def startup(self, sockets: Any = None) -> None:
                await super().startup(sockets=sockets)
                started.set()

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(self.data, self.sessions),
            host=self.host,
            port=self.port,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = _Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name="webshop-http"
        )
        self._thread.start()
        if not started.wait(STARTUP_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"the WebShop server did not start on {self.url}")
        return self

    def stop(self) -> None:
        """Stops the server and waits for its thread to end."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=STARTUP_TIMEOUT_S)
        self._server = self._thread = None

    @property
    def running(self) -> bool:
        """Whether the server thread is alive."""
        return self._thread is not None and self._thread.is_alive()


_SHARED: dict[int, tuple[ShopServer, int]] = {}
_SHARED_LOCK = threading.Lock()
# (server, session) of envs the garbage collector took: a finalizer may run inside any lock
# this thread holds, so it only appends here; the next acquire or release settles them.
_orphans: list[tuple[ShopServer, str]] = []


def forget_session(server: ShopServer, session: str) -> None:
    """Gives back a collected env's session; safe in a finalizer (takes no lock)."""
    _orphans.append((server, session))


def _settle_orphans() -> None:  # with _SHARED_LOCK held
    while _orphans:
        server, session = _orphans.pop()
        server.sessions.pop(session, None)
        current, users = _SHARED.get(id(server.data), (None, 0))
        if current is server:
            _SHARED[id(server.data)] = (server, max(0, users - 1))


def acquire_server(data: ShopData) -> ShopServer:
    """The process's server for ``data``, started on first use; pair with ``release_server``."""
    with _SHARED_LOCK:
        _settle_orphans()
        server, users = _SHARED.get(id(data), (None, 0))
        if server is None or not server.running:
            server, users = ShopServer(data).start(), 0
        _SHARED[id(data)] = (server, users + 1)
        return server


def release_server(server: ShopServer, session: str) -> None:
    """Ends ``session`` and drops one user of ``server``; the last one stops it."""
    with _SHARED_LOCK:
        _settle_orphans()
        server.sessions.pop(session, None)
        current, users = _SHARED.get(id(server.data), (None, 0))
        if current is not server:
            return
        if users > 1:
            _SHARED[id(server.data)] = (server, users - 1)
            return
        del _SHARED[id(server.data)]
    server.stop()


def main(argv: list[str] | None = None) -> None:
    """Serves WebShop for a person to shop in a browser."""
    parser = argparse.ArgumentParser(description="Serve WebShop on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--num-products", type=int, default=None, help="default: the difficulty's (5,000 or 1,000)"
    )
    parser.add_argument("--catalog-seed", type=int, default=0)
    parser.add_argument("--data-path", default=None, help="a folder with WebShop's own files")
    parser.add_argument("--difficulty", choices=DIFFICULTIES, default=DEFAULT_DIFFICULTY)
    args = parser.parse_args(argv)
    data = shop_data(
        args.num_products, args.catalog_seed, args.data_path, difficulty=args.difficulty
    )
    server = ShopServer(data, port=args.port).start()
    print(f"WebShop is serving on {server.url}/ (Ctrl-C stops it)")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
