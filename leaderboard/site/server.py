"""The served site: FastAPI renders each page from the store when it is asked for, so the page
always shows the store as it is now, at the same paths as the static export.

Example:
    >>> from fastapi.testclient import TestClient
    >>> class Empty:
    ...     def suites(self): return []
    ...     def training_runs(self): return {}
    ...     def rated_games(self): return []
    >>> client = TestClient(make_app(Empty()))
    >>> client.get("/").status_code, client.get("/models/nobody.html").status_code
    (200, 404)
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import Request

from leaderboard.site.catalog import ResultReader
from leaderboard.site.pages import PageNotFound, Site, not_found_page
from leaderboard.site.paths import INDEX

__all__ = ["make_app", "serve_site"]


def make_app(store: ResultReader) -> FastAPI:
    """The site as an ASGI app: ``/`` and ``/index.html``, then ``models/``, ``envs/``,
    ``runs/``, ``episodes/`` and ``static/`` as in the export."""
    app = FastAPI(title="rollenv leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(packages=[("leaderboard.site", "static")]), name="static")

    @app.exception_handler(HTTPException)
    def missing(request: Request, error: HTTPException) -> HTMLResponse:
        path = request.url.path.lstrip("/")
        message = (
            f"There is no page {path!r} on this leaderboard."
            if error.status_code == 404
            else str(error.detail)
        )
        return HTMLResponse(not_found_page(message, path), status_code=error.status_code)

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse(Site(store).render(INDEX))

    @app.get("/{path:path}", response_class=HTMLResponse)
    def page(path: str) -> HTMLResponse:
        try:
            return HTMLResponse(Site(store).render(path))
        except PageNotFound as error:
            return HTMLResponse(not_found_page(str(error), path), status_code=404)

    return app


def serve_site(store: ResultReader, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serves the site with uvicorn until interrupted (Ctrl-C), then returns.

    Raises:
        OSError: ``host:port`` cannot be listened on (taken, or not an address of this
            machine); raised before uvicorn starts, so the caller can say so in one line.
    """
    import uvicorn

    from rollenv.server.serving import listening_socket

    # bound here rather than by uvicorn, which logs a failed bind and exits the process
    listener = listening_socket(host, port)
    server = uvicorn.Server(uvicorn.Config(make_app(store), log_level="info"))
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:
        pass  # uvicorn shut down cleanly and re-raised the Ctrl-C it caught
    finally:
        listener.close()
