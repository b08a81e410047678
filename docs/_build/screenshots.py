"""Screenshots of the built site for the docs' own record: the home page and one generated env
page, taken by Chromium from a local server.

Run (from the repository root, after ``mkdocs build --site-dir /tmp/site``)::

    python docs/_build/screenshots.py /tmp/site
"""

from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent / "screenshots"
PAGES = {"home.png": "", "env_page_sokoban.png": "environments/sokoban/"}


def main(site: str) -> None:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}/"
    OUT.mkdir(exist_ok=True)
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, path in PAGES.items():
            page.goto(root + path)
            page.screenshot(path=OUT / name)
            print(OUT / name)
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
