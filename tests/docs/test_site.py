"""The documentation site: ``mkdocs build --strict`` passes (no broken link, no page left out of
the navigation), every registered id and every config field is in it, and a real Chromium walks
it: every page of the navigation loads with no console error, no broken link and no missing
image, and the search finds an env."""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.doc_pages import REPO

pytest.importorskip("mkdocs", reason="the docs extra is missing: pip install -e '.[docs]'")
pytest.importorskip("material", reason="the docs extra is missing: pip install -e '.[docs]'")
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for the module's tests."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    pages = list(out.rglob("index.html"))
    print(f"mkdocs build --strict: {len(pages)} pages")
    return out


def _text(path: Path) -> str:
    return re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8"))


def test_every_registered_id_has_its_place_in_the_docs(site: Path) -> None:
    import rollenv

    text = " ".join(_text(p) for p in (site / "environments").rglob("index.html"))
    ids = [spec.id for spec in rollenv.registry.values()]
    ids += [entry.id for entry in rollenv.registry.unavailable.values()]
    assert len(ids) > 200
    assert [env_id for env_id in ids if env_id not in text] == []


def test_every_config_field_is_in_the_reference(site: Path) -> None:
    from trainer.config_reference import config_fields

    text = _text(site / "reference" / "config" / "index.html")
    keys = [field.key for field in config_fields()]
    assert len(keys) > 100
    assert [key for key in keys if key not in text] == []


def test_every_command_is_in_the_cli_reference(site: Path) -> None:
    text = _text(site / "reference" / "cli" / "index.html")
    for command in ("envs", "play", "check", "train", "sft", "eval", "serve", "config"):
        assert f"roll-agent {command}" in text


# ---------------------------------------------------------------------------------- Chromium
@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 - 127.0.0.1
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium: apt-get install chromium")
def test_chromium_walks_the_site_and_its_search(served: str) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    problems: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM))
        page = browser.new_page()
        page.on(
            "console",
            lambda message: (
                problems.append(f"{page.url}: console {message.text}")
                if message.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda error: problems.append(f"{page.url}: {error}"))
        page.goto(served)
        nav = page.eval_on_selector_all(
            "nav.md-nav a.md-nav__link[href]", "as => as.map(a => a.href)"
        )
        pages = sorted({url.split("#")[0] for url in nav if url.startswith(served)})
        assert len(pages) > 40
        links: set[str] = set()
        for url in pages:
            response = page.goto(url)
            assert response is not None and response.status == 200, url
            broken = page.eval_on_selector_all(
                "article img",
                "is => is.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)",
            )
            problems += [f"{url}: missing image {src}" for src in broken]
            hrefs = page.eval_on_selector_all("article a[href]", "as => as.map(a => a.href)")
            links |= {href.split("#")[0] for href in hrefs if href.startswith(served)}
        problems += [f"broken link {link}" for link in sorted(links) if _status(link) != 200]

        page.goto(served)
        page.click("label.md-search__icon, .md-search__input", timeout=10_000)
        # the search index loads in a web worker, slowly on a loaded machine: type again
        # until results show
        for _ in range(12):
            page.fill(".md-search__input", "")
            page.type(".md-search__input", "Sokoban")
            try:
                page.wait_for_selector(".md-search-result__item", timeout=10_000)
                break
            except playwright.TimeoutError:
                continue
        results = page.eval_on_selector_all(
            ".md-search-result__item a", "as => as.map(a => a.href)"
        )
        browser.close()
    assert any("environments/sokoban" in url for url in results), results
    assert problems == []
