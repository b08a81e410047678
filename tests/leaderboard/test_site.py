"""The leaderboard's page without a browser: boards found in real Sokoban and FrozenLake
observations (and none in text that is no board), the pages' content (the ranking's order, the
overall rule, escaped transcripts, charts), every relative link of the export resolving to a
file, and the served app answering every page with 200 and an unknown one with a clear 404.

The store is a real SQLite file holding episodes that the oracle and a random policy played
in real envs, plus hand-written episodes whose text tries to break out of the page.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import rollenv
from leaderboard.records import EpisodeRecord, EvalIdentity, Provenance, TrainingPoint, TurnRecord
from leaderboard.site import export_site, make_app, serve_site
from leaderboard.site.charts import Bar, env_chart
from leaderboard.site.grids import Grid, Text, segments
from leaderboard.site.pages import OVERALL_RULE
from leaderboard.site.paths import (
    env_path,
    episode_path,
    match_path,
    model_path,
    ratings_path,
    run_path,
)
from leaderboard.site.transcript import reply_of
from leaderboard.stats import wilson_interval
from leaderboard.store import ResultStore
from leaderboard.suites import SuiteEnv
from rollenv.policies import RandomPolicy
from trainer.evaluation.suite import BaselinePlayer
from trainer.evaluation.tournament import round_robin

SOKOBAN, LAKE, CODE, SHOP = "SimpleSokoban-v0", "FrozenLake-v0", "CodeSandbox-v0", "WebShop-v0"
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
RUN = "sokoban-run-1"
TTT = "textarena/TicTacToe-v0"


# ---------------------------------------------------------------------------- boards
@pytest.mark.parametrize("env_id", [SOKOBAN, "LargerSokoban-v0", LAKE])
def test_real_boards_are_grids(env_id: str) -> None:
    env = rollenv.make(env_id)
    policy = RandomPolicy(env, seed=0)
    for seed in range(3):
        observation, info = env.reset(seed=seed)
        for _ in range(4):
            parts = segments(env_id, observation)
            assert len(parts) == 1 and isinstance(parts[0], Grid), observation
            assert parts[0].text == observation
            names = {cell.name for row in parts[0].rows for cell in row}
            assert names & {"player", "player-on-target", "player-on-goal", "player-in-hole"}
            observation, *_ = env.step(policy.act(observation, info))


def test_symbols_are_named_by_family() -> None:
    sokoban = segments(SOKOBAN, "#P_\n#XO\n#√S")[0]
    lake = segments(LAKE, "P_O\n_XG\n__√")[0]
    assert isinstance(sokoban, Grid) and isinstance(lake, Grid)
    assert [[c.name for c in row] for row in sokoban.rows] == [
        ["wall", "player", "floor"],
        ["wall", "box", "target"],
        ["wall", "box-on-target", "player-on-target"],
    ]
    assert [c.name for c in lake.rows[1]] == ["ice", "player-in-hole", "goal"]


def test_board_between_text_lines() -> None:
    parts = segments(LAKE, "Invalid action.\nP_\n_G\n\nYou have 3 turns left.")
    assert [type(part) for part in parts] == [Text, Grid, Text]
    assert parts[0].text == "Invalid action." and parts[2].text == "You have 3 turns left."


@pytest.mark.parametrize(
    "text",
    [
        "Push every box onto a target.",
        "####",  # one line is no board
        "##\n###",  # rows of different lengths
        "P_\nab",  # a letter outside the palette
        "",
    ],
)
def test_text_that_is_no_board(text: str) -> None:
    assert not any(isinstance(part, Grid) for part in segments(SOKOBAN, text))


def test_webshop_and_code_pages_are_text() -> None:
    shop = rollenv.make(SHOP)
    observation, _ = shop.reset(seed=0)
    results, *_ = shop.step("<answer>search[red shirt]</answer>")
    code, _ = rollenv.make(CODE).reset(seed=0)
    for env_id, text in [(SHOP, observation), (SHOP, results), (CODE, code), (SHOP, "__\n__")]:
        assert segments(env_id, text) == [Text(text.strip("\n"))]


def test_chart_of_all_and_nothing_solved() -> None:
    """Wilson's interval at n of n ends a rounding error below 1; the chart still draws."""
    bars = []
    for label, successes in [("all", 10), ("none", 0)]:
        low, high = wilson_interval(successes, 10)
        bars.append(Bar(label, successes / 10, low, high))
    svg = env_chart(bars, key="edges")
    assert svg.startswith("<svg") and ">all<" in svg and ">none<" in svg


def test_code_reply_is_picked_out() -> None:
    reply = reply_of(
        "<think>sum them</think>\n<answer>\ndef f(a, b):\n    return a + b\n</answer>", "code"
    )
    assert reply.thinking == "sum them"
    assert reply.code == "def f(a, b):\n    return a + b"
    assert reply_of("<answer>Up</answer>", "sokoban").code is None


# ---------------------------------------------------------------------------- the store
def play(env_id: str, policy: str, seed: int) -> EpisodeRecord:
    """One real episode of ``random`` or ``oracle``, recorded as ``roll-agent eval`` does."""
    return BaselinePlayer(policy).play(SuiteEnv(env_id, max_turns=12), [seed])[0]


def provenance(env_ids: list[str]) -> Provenance:
    return Provenance(
        model_source="baseline",
        suite_fingerprint="fp-smoke",
        env_versions=dict.fromkeys(env_ids, "0.1.0"),
        rollenv_version="0.1.0",
        git_commit="c953489",
        hardware="2 CPU cores, no GPU",
        command="roll-agent eval --suite smoke",
    )


def add_eval(store: ResultStore, identity: EvalIdentity, records: list[EpisodeRecord]) -> int:
    env_ids = list(dict.fromkeys(record.env_id for record in records))
    start = store.start_eval(identity, provenance(env_ids), env_ids)
    store.add_episodes(start.eval_id, records)
    store.finish_eval(start.eval_id)
    return start.eval_id


def hostile_episode(env_id: str, seed: int) -> EpisodeRecord:
    code = f"def f():\n    return '{HOSTILE}'"
    turn = TurnRecord(f"<answer>\n{code}\n</answer>", f"FAILED: {HOSTILE}", 0.0, {"success": False})
    return EpisodeRecord(
        env_id,
        seed,
        f"Solve it. {HOSTILE}",
        f"Problem {HOSTILE}",
        (turn,),
        False,
        0.0,
        "terminated",
        0.1,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ResultStore:
    store = ResultStore(tmp_path_factory.mktemp("board") / "leaderboard.db")
    envs = [SOKOBAN, LAKE]
    greedy = {"temperature": 0.0}

    def smoke(model: str, version: int = 0, sampling: dict | None = None) -> EvalIdentity:
        return EvalIdentity(model, "baseline", "smoke", version, sampling or greedy)

    oracle = [play(env_id, "oracle", seed) for env_id in envs for seed in (0, 1)]
    random = [play(env_id, "random", seed) for env_id in envs for seed in (0, 1)]
    add_eval(store, smoke("oracle"), oracle)
    add_eval(store, smoke("random"), random)
    add_eval(store, smoke("random", sampling={"temperature": 0.7, "seed": 3}), random[:2])
    add_eval(store, smoke(f"{RUN}@step-20"), oracle[:1] + random[1:])
    add_eval(store, smoke("oracle", version=1), oracle)
    add_eval(
        store,
        EvalIdentity(HOSTILE, "baseline", "custom", 1),
        [hostile_episode(CODE, 0), hostile_episode(CODE, 1)],
    )
    for step, rate in [(0, 0.0), (10, 0.25), (20, 0.5)]:
        store.add_training_point(
            TrainingPoint(
                RUN, "tiny-random", SOKOBAN, step, {"success": rate, "return": rate * 10}, 1.7e9
            )
        )
    store.add_matches(round_robin(TTT, ["random", "solver"], games=2))
    yield store
    store.close()


@pytest.fixture(scope="module")
def site(store: ResultStore, tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = export_site(store, tmp_path_factory.mktemp("site"))
    assert index.name == "index.html"
    return index.parent


def pages(site: Path) -> dict[str, str]:
    return {path.relative_to(site).as_posix(): path.read_text() for path in site.rglob("*.html")}


class Links(HTMLParser):
    """Collects every href and src, and every element id."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "xlink:href") and value is not None:
                self.links.append(value)
            if name == "id" and value is not None:
                self.ids.append(value)


def parsed(html: str) -> Links:
    links = Links()
    links.feed(html)
    return links


def ranking_models(html: str, suite: str, version: int) -> list[str]:
    table = re.search(
        rf'<table class="ranking sortable" data-suite="{suite}" data-version="{version}">'
        r"(.*?)</table>",
        html,
        re.DOTALL,
    )
    assert table is not None
    return re.findall(r'<tr data-eval="\d+" data-model="([^"]*)"', table[1])


# ---------------------------------------------------------------------------- the export
def test_every_relative_link_resolves(site: Path, store: ResultStore) -> None:
    every = pages(site)
    episode_count = sum(len(store.episodes(e.eval_id)) for e in store.evals())
    assert sum(path.startswith("episodes/") for path in every) == episode_count
    assert {"index.html", model_path("oracle"), env_path(SOKOBAN), run_path(RUN)} <= set(every)
    for path, html in every.items():
        for link in parsed(html).links:
            assert not re.match(r"^[a-z]+://|^//", link), f"{path} reaches outside: {link}"
            if link.startswith(("data:", "#")):
                continue
            target = (site / path).parent / link.split("#")[0]
            assert target.resolve().is_file(), f"{path} links to {link}, which is missing"


def test_a_rated_game_has_its_ratings_page_and_every_match_its_viewer(
    site: Path, store: ResultStore
) -> None:
    every = pages(site)
    stored = store.matches(TTT)
    assert len(stored) == 4  # two games a seat
    assert {ratings_path(TTT), *(match_path(i) for i, _ in stored)} <= set(every)
    assert ratings_path(TTT) in " ".join(parsed(every["index.html"]).links)
    ratings = every[ratings_path(TTT)]
    assert ratings.index('data-player="solver"') < ratings.index('data-player="random"')
    solver = store.ratings(TTT)[0]
    assert f"{solver.interval[0]:.2f} – {solver.interval[1]:.2f}" in ratings
    match_id, record = stored[0]
    viewer = every[match_path(match_id)]
    assert viewer.count('class="move seat-0"') + viewer.count('class="move seat-1"') == len(
        record.moves
    )
    assert 'data-seat="0"' in viewer and 'data-seat="1"' in viewer


def test_index_ranks_and_states_the_rule(site: Path) -> None:
    html = (site / "index.html").read_text()
    assert OVERALL_RULE in html
    assert "rows missing an env have none and rank last" in html
    models = ranking_models(html, "smoke", 0)
    assert models.index("oracle") < models.index("random")
    assert models[-1] == "random"  # the sampled eval lacks FrozenLake: no overall, last
    assert ranking_models(html, "smoke", 1) == ["oracle"]  # versions never share a table
    assert html.index('id="suite-smoke-v1"') < html.index('id="suite-smoke-v0"')  # newest first
    assert "T=0.7, seed 3" in html
    assert '<link rel="icon" href="data:,">' in html
    assert html.count('<figure class="chart"') == 2 + 2 + 1  # smoke v0, v1, custom
    assert '<figure class="chart learning"' in html


def test_chart_ids_are_unique_on_a_page(site: Path) -> None:
    for path, html in pages(site).items():
        ids = parsed(html).ids
        assert len(ids) == len(set(ids)), path


def test_untrusted_text_is_escaped_everywhere(site: Path) -> None:
    for path, html in pages(site).items():
        assert "<script>alert" not in html, path
        assert "<img src=x" not in html, path
    model = (site / model_path(HOSTILE)).read_text()
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in model


def test_code_episode_shows_code_and_test_output(site: Path, store: ResultStore) -> None:
    [evaluation] = store.evals(suite="custom")
    first = store.episodes(evaluation.eval_id)[0]
    html = (site / episode_path(first.episode_id)).read_text()
    assert '<pre class="code"><code>def f():\n    return &#39;&lt;script&gt;' in html
    assert '<pre class="text test-output">FAILED: &lt;script&gt;' in html
    assert "Test output" in html


def test_sokoban_episode_viewer(site: Path, store: ResultStore) -> None:
    [oracle] = [
        e for e in store.evals(suite="smoke", suite_version=0) if e.identity.model == "oracle"
    ]
    summary = store.episodes(oracle.eval_id, SOKOBAN)[0]
    record = store.episode(summary.episode_id)
    html = (site / episode_path(summary.episode_id)).read_text()
    assert html.count('<article class="turn"') == len(record.turns) + 1
    assert (
        html.count('<table class="grid grid-sokoban" aria-label="board"') == len(record.turns) + 1
    )
    assert f"turn 0 of {len(record.turns)}" in html
    assert 'id="prev"' in html and 'id="next"' in html and 'id="turn-index"' in html
    assert 'class="player"' in html and 'class="box-on-target"' in html  # the oracle solved it
    assert record.instruction.split(".")[0] in html


def test_checkpoint_links_to_its_run(site: Path) -> None:
    model = (site / model_path(f"{RUN}@step-20")).read_text()
    assert f'href="../{run_path(RUN)}"' in model
    run = (site / run_path(RUN)).read_text()
    assert "<svg" in run and f'href="../{model_path(f"{RUN}@step-20")}"' in run


# ---------------------------------------------------------------------------- served
def test_served_pages_answer(site: Path, store: ResultStore) -> None:
    client = TestClient(make_app(store))
    for path in pages(site):
        response = client.get(f"/{path}")
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
    for name in ("style.css", "sort.js", "viewer.js"):
        assert client.get(f"/static/{name}").status_code == 200
    assert client.get("/").text.count('<table class="ranking') == 3


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/models/nobody.html", "No model named by &#39;nobody&#39; is on this leaderboard."),
        ("/episodes/99999.html", "No episode 99999 is stored on this leaderboard."),
        ("/envs/Nowhere-v0.html", "No env named by &#39;Nowhere-v0&#39;"),
        ("/static/missing.css", "There is no page &#39;static/missing.css&#39;"),
        ("/elsewhere", "There is no page &#39;elsewhere&#39;"),
    ],
)
def test_unknown_pages_are_clear_404s(store: ResultStore, path: str, message: str) -> None:
    response = TestClient(make_app(store)).get(path)
    assert response.status_code == 404
    assert message in response.text


def test_served_pages_show_fresh_data(tmp_path: Path) -> None:
    with ResultStore(tmp_path / "fresh.db") as store:
        client = TestClient(make_app(store))
        assert "No results yet" in client.get("/").text
        add_eval(
            store, EvalIdentity("latecomer", "baseline", "smoke", 0), [play(LAKE, "oracle", 0)]
        )
        assert 'data-model="latecomer"' in client.get("/index.html").text


def test_serve_site_refuses_a_taken_port(store: ResultStore) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(OSError):
            serve_site(store, port=port)


def test_serve_site_answers_until_ctrl_c(store: ResultStore, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    script = (
        "import sys; from leaderboard.store import ResultStore; "
        "from leaderboard.site import serve_site; "
        f"serve_site(ResultStore(sys.argv[1]), port={port}); print('stopped')"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", script, store.url.removeprefix("sqlite:///")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        html = None
        while html is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
                    html = response.read().decode()
            except urllib.error.URLError:
                # not listening yet: wait for the process a moment, failing if it died
                with contextlib.suppress(subprocess.TimeoutExpired):
                    server.wait(timeout=0.1)
                assert server.returncode is None, server.stderr.read()
        assert 'data-model="oracle"' in html
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=20)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert out.splitlines()[-1] == "stopped"
