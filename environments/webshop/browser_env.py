"""``WebShopHTMLEnv``: WebShop through a real web server and a real headless Chromium.

The pages of ``WebShopEnv`` are served by ``environments.webshop.server`` (FastAPI, Jinja
templates, uvicorn on 127.0.0.1) and the env drives Chromium through Playwright: ``search[q]``
types ``q`` into the search box and presses Search, ``click[label]`` clicks the element showing
that label. The observation is the page's visible text (``document.body.innerText``), which ends
with the list of available actions; the reward of a purchase is read from the page that shows
it. Rules, rewards and info keys are those of ``WebShopEnv``.

All envs of a process share one server per catalog (one session each) and one Chromium (one
browser context each); the first reset starts them and the last ``close()`` stops them. Needs
``pip install "rollenv[webshop]"`` and Debian's ``chromium``.

Example:
    >>> import rollenv
    >>> env = rollenv.make("WebShopHTML-v0")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> obs.splitlines()[-1]  # doctest: +SKIP
    'Available actions: search[<your query>]'
    >>> env.close()  # doctest: +SKIP
"""

from __future__ import annotations

import random
import secrets
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from environments.webshop.browser import (
    CHROMIUM_PATH,
    BrowserHost,
    acquire_browser,
    check_chromium,
    forget_context,
    release_browser,
)
from environments.webshop.data import ShopData, shop_data
from environments.webshop.deps import require
from environments.webshop.difficulty import DEFAULT_DIFFICULTY
from environments.webshop.env import SUCCESS_REWARD, describe_rules, parse_action, shop_tools
from environments.webshop.instructions import Goal
from environments.webshop.pages import MAX_QUERY_LENGTH, normalize_label
from environments.webshop.server import (
    ShopServer,
    acquire_server,
    forget_session,
    release_server,
)
from rollenv.action_tools import ActionTool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv

_READ_PAGE = """() => ({
  text: document.body.innerText,
  labels: Array.from(document.querySelectorAll('[data-label]')).map(e => e.dataset.label),
  searchBar: document.querySelector('#search-input') !== null,
  reward: document.querySelector('#reward')?.dataset.reward ?? null,
})"""


@dataclass(frozen=True)
class PageState:
    """What the env read from the page after its last navigation."""

    text: str = ""
    labels: tuple[str, ...] = ()
    search_bar: bool = False
    reward: float | None = None


def _read(page: Any) -> PageState:
    raw = page.evaluate(_READ_PAGE)
    reward = raw["reward"]
    return PageState(
        text=raw["text"].strip(),
        labels=tuple(raw["labels"]),
        search_bar=bool(raw["searchBar"]),
        reward=None if reward is None else float(reward),
    )


def _forget(host: BrowserHost, context: Any, server: ShopServer, session: str) -> None:
    # a finalizer: it may run inside any lock, so it only leaves notes for the next caller
    forget_context(host, context)
    forget_session(server, session)


# Browser calls are module functions of the page, not methods: the frame of the last call stays
# referenced after it returns (gc.get_referrers showed it; what holds it, in the browser thread or
# Playwright's sync layer, was not traced), and a frame holding ``self`` kept an unclosed env,
# and with it the shared server and Chromium, from being freed.
def _navigate(page: Any, url: str) -> PageState:
    page.goto(url, wait_until="load")
    return _read(page)


def _act(page: Any, kind: str, index: int, query: str) -> PageState:
    with page.expect_navigation(wait_until="load"):
        if kind == "search":
            page.fill("#search-input", query)
            page.click("#search-button")
        else:
            page.locator("[data-label]").nth(index).click()
    return _read(page)


class WebShopHTMLEnv(TextEnv):
    """WebShop served over HTTP and read by headless Chromium.

    Args:
        num_products: size of the generated catalog (``None``: the difficulty's default).
        catalog_seed: seed of the generated catalog.
        data_path: a folder with WebShop's own files instead of a generated catalog.
        goal_source: ``"human"`` or ``"synthetic"`` instructions with ``data_path``.
        difficulty: ``"paper"`` or ``"easy"``, as in ``WebShopEnv``.
        max_actions: actions per episode before truncation.
        format_penalty: reward of a reply with no available action.
        answer_format: how actions are read from a reply.
        render_mode: ``"ansi"`` or ``None``.
        chromium_path: the Chromium binary (Debian's by default).
        timeout_ms: Playwright's timeout for one navigation.

    Raises:
        MissingExtraError: a WebShop dependency is missing.
        FileNotFoundError: Chromium is not installed.
    """

    oracle = "environments.webshop.oracle:WebShopOracle"

    def __init__(
        self,
        num_products: int | None = None,
        catalog_seed: int = 0,
        data_path: str | Path | None = None,
        goal_source: str = "human",
        *,
        difficulty: str = DEFAULT_DIFFICULTY,
        max_actions: int = 15,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
        chromium_path: str = CHROMIUM_PATH,
        timeout_ms: float = 10_000,
    ) -> None:
        super().__init__(
            answer_format=answer_format,
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        for module in ("fastapi", "uvicorn", "jinja2", "playwright.sync_api"):
            require(module)
        check_chromium(chromium_path)
        self.data: ShopData = shop_data(
            num_products, catalog_seed, data_path, goal_source, difficulty
        )
        self.chromium_path = chromium_path
        self.timeout_ms = timeout_ms
        self.session = secrets.token_hex(8)
        self.goal_number = 0
        self.state = PageState()
        self.last_reward: float | None = None
        self._instruction = describe_rules(self.answer_format)
        self._host: BrowserHost | None = None
        self._server: ShopServer | None = None
        self._page: Any = None
        self._finalizer: weakref.finalize | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def server_url(self) -> str | None:
        """The server this env shops on (``None`` before the first reset)."""
        return None if self._server is None else self._server.url

    def _start(self) -> None:
        if self._page is not None:
            return
        server = acquire_server(self.data)
        try:
            host = acquire_browser()
        except BaseException:
            release_server(server, self.session)
            raise
        context, page = host.call(host.new_page)
        host.call(page.set_default_timeout, self.timeout_ms)
        self._server, self._host, self._page = server, host, page
        self._finalizer = weakref.finalize(self, _forget, host, context, server, self.session)
        self._finalizer.atexit = False  # at exit the browser thread is gone with the process

    def close(self) -> None:
        """Closes this env's browser context and session; the last env stops server and browser."""
        if self._finalizer is not None and self._finalizer.alive:
            _, _, (host, context, server, session), _ = self._finalizer.detach()
            host.call(context.close)
            release_server(server, session)
            release_browser(host)
        self._host = self._server = self._page = None
        super().close()

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        return self._instruction

    @property
    def goal(self) -> Goal:
        """What the current episode asks to buy."""
        return self.data.goal(self.goal_number)

    @property
    def action_words(self) -> tuple[str, ...]:
        if self._page is None:  # before the first reset: the search page's actions
            return ("search[throw blanket]", "search[coffee mug]")
        words = [f"click[{label}]" for label in self.state.labels]
        if self.state.search_bar:
            goal = self.goal
            words = [
                f"search[{goal.product_type}]",
                f"search[{' '.join((*goal.attributes[:1], goal.product_type))}]",
                *words,
            ]
        return tuple(words)

    def action_tools(self) -> tuple[ActionTool, ...]:
        if self._page is None:
            return shop_tools(True, [])
        return shop_tools(self.state.search_bar, self.state.labels)

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        number = rng.getrandbits(62)
        if options and "goal" in options:
            number = int(options["goal"])
        self._start()
        self.goal_number = number
        self.last_reward = None
        assert self._host is not None and self._server is not None
        url = f"{self._server.url}/s/{self.session}/reset?goal={number}"
        self.state = self._host.call(_navigate, self._page, url)

    def _observation(self) -> str:
        return self.state.text

    def _parse_action(self, text: str) -> tuple[str, int, str] | None:
        parsed = parse_action(text)
        if parsed is None:
            return None
        kind, argument = parsed
        if kind == "search":
            query = " ".join(argument.split())
            if self.state.search_bar and query and len(query) <= MAX_QUERY_LENGTH:
                return ("search", -1, query)
            return None
        wanted = normalize_label(argument)
        for index, label in enumerate(self.state.labels):
            if normalize_label(label) == wanted:
                return ("click", index, label)
        return None

    def _apply(self, action: tuple[str, int, str]) -> tuple[float, bool]:
        if self.last_reward is not None or self._host is None:
            return 0.0, False
        before = self.state.text
        self.state = self._host.call(_act, self._page, *action)
        if self.state.reward is not None:
            self.last_reward = self.state.reward
            return self.last_reward, True
        return 0.0, self.state.text != before

    def _solved(self) -> bool:
        return self.last_reward is not None and self.last_reward >= SUCCESS_REWARD

    def _failed(self) -> bool:
        return self.last_reward is not None and not self._solved()
