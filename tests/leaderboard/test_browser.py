"""The leaderboard's page in a real browser: Debian's Chromium driven by Playwright, against
the served app (uvicorn on a free port of 127.0.0.1) and the exported site (``file://``).

The store holds episodes the oracle and a random policy played in SimpleSokoban-v0 and
FrozenLake-v0, a checkpoint of a training run that played half its seeds like each, and the
run's evaluation points. Each test checks, besides its own subject, that the page logged no
console error, threw nothing, and requested nothing but the site's own files, all answered.

``ROLLENV_UPDATE_SCREENSHOT=1`` also writes the index's screenshot to ``docs/leaderboard.png``.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from leaderboard.records import EpisodeRecord, EvalIdentity, Provenance, TrainingPoint
from leaderboard.site import export_site, make_app
from leaderboard.store import ResultStore
from leaderboard.suites import SuiteEnv
from trainer.evaluation.suite import BaselinePlayer
from trainer.evaluation.tournament import round_robin

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(
        "needs Debian's Chromium at /usr/bin/chromium (apt-get install -y chromium)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="needs Playwright's Python API (pip install playwright)"
)
uvicorn = pytest.importorskip(
    "uvicorn", reason="needs uvicorn (pip install 'rollenv[leaderboard]')"
)

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ENVS = ("SimpleSokoban-v0", "FrozenLake-v0")
SEEDS = range(4)
RUN = "sokoban-run-1"
GAME = "textarena/TicTacToe-v0"
REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- the store
def play(env_id: str, policy: str, seed: int) -> EpisodeRecord:
    """One real episode of ``random`` or ``oracle``, recorded as ``roll-agent eval`` does."""
    return BaselinePlayer(policy).play(SuiteEnv(env_id, max_turns=12), [seed])[0]


def policy_of(model: str, seed: int) -> str:
    """The stand-in checkpoint is a half-trained agent: the oracle on even seeds, random on odd."""
    if model == f"{RUN}@step-30":
        return "oracle" if seed % 2 == 0 else "random"
    return model


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ResultStore]:
    store = ResultStore(tmp_path_factory.mktemp("board") / "leaderboard.db")
    provenance = Provenance(
        model_source="baseline",
        suite_fingerprint="fp-smoke",
        env_versions=dict.fromkeys(ENVS, "0.1.0"),
        rollenv_version="0.1.0",
        git_commit="c953489",
        hardware="2 CPU cores, no GPU",
        command="roll-agent eval --suite smoke",
    )
    for model in ("oracle", "random", f"{RUN}@step-30"):
        weights = "baseline" if model in ("oracle", "random") else "sha256:5d41402abc4b2a76"
        identity = EvalIdentity(model, weights, "smoke", 0, {"temperature": 0.0})
        start = store.start_eval(identity, provenance, list(ENVS))
        episodes = [play(e, policy_of(model, s), s) for e in ENVS for s in SEEDS]
        store.add_episodes(start.eval_id, episodes)
        store.finish_eval(start.eval_id)
    for step, rate in [(0, 0.0), (10, 0.2), (20, 0.35), (30, 0.5)]:
        for env_id, bonus in zip(ENVS, (0.0, 0.15), strict=True):
            metrics = {"success": min(1.0, rate + bonus), "return": rate * 10}
            store.add_training_point(
                TrainingPoint(RUN, "tiny-random", env_id, step, metrics, 1.7e9 + step)
            )
    store.add_matches(round_robin(GAME, ["random", "solver"], games=3))
    yield store
    store.close()


# ---------------------------------------------------------------------------- the two sites
@pytest.fixture(scope="module")
def served(store: ResultStore) -> Iterator[str]:
    """The app on a port of 127.0.0.1 bound before uvicorn starts: connections wait in the
    socket's backlog until it serves them, so nothing has to sleep."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(store), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}/"
    with urllib.request.urlopen(base, timeout=30) as response:  # blocks until it answers
        assert response.status == 200
    yield base
    server.should_exit = True
    thread.join(timeout=10)
    listener.close()
    assert not thread.is_alive(), "uvicorn did not shut down"


@pytest.fixture(scope="module")
def exported(store: ResultStore, tmp_path_factory: pytest.TempPathFactory) -> str:
    index = export_site(store, tmp_path_factory.mktemp("site"))
    return index.parent.as_uri() + "/"


@pytest.fixture(params=["served", "exported"])
def base(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------------------- the browser
@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield browser
        browser.close()


class Watched:
    """A page, and every problem it reported: console errors, uncaught exceptions, requests
    that failed or were answered with an error, and requests outside the site."""

    def __init__(self, page: object, base: str) -> None:
        self.page = page
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url} {r.failure}"))
        page.on("response", self._response)
        page.on("request", lambda r: self._request(r.url, base))

    def _console(self, message: object) -> None:
        if message.type == "error":
            self.problems.append(f"console {message.type}: {message.text}")

    def _response(self, response: object) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def _request(self, url: str, base: str) -> None:
        if not url.startswith((base, "data:")):
            self.problems.append(f"request outside the site: {url}")


@pytest.fixture
def watched(browser: object, base: str) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield Watched(page, base)
    context.close()


def models_in_ranking(page: object) -> list[str]:
    rows = page.locator("table.ranking tbody tr")
    return [rows.nth(k).get_attribute("data-model") for k in range(rows.count())]


def visible_board(page: object) -> str:
    return page.locator(".turn:not([hidden]) table.grid").inner_html()


# ---------------------------------------------------------------------------- the tests
def test_ranking_is_in_order_and_sorts(watched: Watched, base: str) -> None:
    page = watched.page
    page.goto(base + "index.html")
    ranked = models_in_ranking(page)
    assert ranked == ["oracle", f"{RUN}@step-30", "random"]

    page.click('table.ranking th[data-col="overall"]')
    assert models_in_ranking(page) == ranked[::-1]
    assert page.get_attribute('th[data-col="overall"]', "aria-sort") == "ascending"
    page.click('table.ranking th[data-col="overall"]')
    assert models_in_ranking(page) == ranked

    page.click('table.ranking th[data-col="model"]')
    assert models_in_ranking(page) == sorted(ranked)
    page.click('table.ranking th[data-col="rank"]')
    assert models_in_ranking(page) == ranked
    assert watched.problems == []


def test_charts_render(watched: Watched, base: str) -> None:
    page = watched.page
    page.goto(base + "index.html")
    charts = page.locator("figure.chart svg")
    assert charts.count() == len(ENVS) + 1  # a chart per env, and the run's learning curve
    for k in range(charts.count()):
        box = charts.nth(k).bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50
    assert page.locator("figure.chart.learning svg path").count() > 0
    page.click(f'figure.chart[data-run="{RUN}"] figcaption a')
    assert page.locator("h1").inner_text() == f"Training run {RUN}"
    assert page.locator("figure.chart svg").bounding_box()["height"] > 50
    assert watched.problems == []


def test_episode_viewer_steps_through_sokoban(watched: Watched, base: str) -> None:
    page = watched.page
    page.goto(base + "index.html")
    page.click('table.ranking tr[data-model="oracle"] td.model a')
    page.click('details.episodes[data-env="SimpleSokoban-v0"] summary')
    page.click('details.episodes[data-env="SimpleSokoban-v0"] a.solved >> nth=0')
    # the click returns once the episode page starts loading; its viewer script (which hides
    # all turns but the first) runs before "load"
    page.wait_for_load_state("load")
    assert page.locator("#viewer").count() == 1
    turns = int(page.get_attribute("#viewer", "data-turns"))
    assert turns >= 2
    indicator = page.locator("#turn-index")
    assert indicator.inner_text() == f"turn 0 of {turns}"
    assert page.locator(".turn:not([hidden])").count() == 1
    assert page.locator("#prev").is_disabled()
    start = visible_board(page)
    assert "player" in start

    page.click("#next")
    assert indicator.inner_text() == f"turn 1 of {turns}"
    after_one = visible_board(page)
    assert after_one != start  # the oracle never wastes a move
    page.keyboard.press("ArrowRight")
    assert indicator.inner_text() == f"turn 2 of {turns}"
    assert visible_board(page) not in (start, after_one)

    page.keyboard.press("ArrowLeft")
    assert indicator.inner_text() == f"turn 1 of {turns}"
    assert visible_board(page) == after_one
    page.click("#prev")
    assert indicator.inner_text() == f"turn 0 of {turns}"
    assert visible_board(page) == start
    assert page.locator("#prev").is_disabled()

    page.keyboard.press("End")
    assert indicator.inner_text() == f"turn {turns} of {turns}"
    assert page.locator("#next").is_disabled()
    assert page.locator(".turn:not([hidden]) .grid td.box-on-target").count() >= 1
    assert watched.problems == []


def test_ratings_of_a_game_and_a_match_with_both_seats_turns(watched: Watched, base: str) -> None:
    page = watched.page
    page.goto(base + "index.html")
    page.click(f'#ratings a:text("{GAME}")')
    page.wait_for_load_state("load")
    rows = page.locator("#ratings tbody tr")
    assert [rows.nth(k).get_attribute("data-player") for k in range(rows.count())] == [
        "solver",
        "random",
    ]
    interval = page.locator('#ratings tr[data-player="solver"] td.interval').inner_text()
    low, high = (float(x) for x in interval.split(" – "))
    mu = float(page.locator('#ratings tr[data-player="solver"] td:nth-child(3)').inner_text())
    assert low < mu < high
    page.click("ul.matches a >> nth=0")
    page.wait_for_load_state("load")
    assert page.locator("#seats tbody tr").count() == 2
    seats = {page.locator(".move").nth(k).get_attribute("data-seat") for k in range(2)}
    assert seats == {"0", "1"}  # the first two moves, one of each seat
    first = page.locator(".move.seat-0").first.bounding_box()
    second = page.locator(".move.seat-1").first.bounding_box()
    assert first is not None and second is not None and first["x"] < second["x"]
    assert watched.problems == []


def test_screenshot_of_the_index(browser: object, exported: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watched = Watched(page, exported)
    page.goto(exported + "index.html")
    shot = page.screenshot(full_page=True, path=tmp_path / "leaderboard.png")
    context.close()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "leaderboard.png").stat().st_size
    if os.environ.get("ROLLENV_UPDATE_SCREENSHOT") == "1":
        (REPO / "docs").mkdir(exist_ok=True)
        (REPO / "docs" / "leaderboard.png").write_bytes(shot)
    assert watched.problems == []
