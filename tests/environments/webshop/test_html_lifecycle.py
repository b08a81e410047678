"""The shared server and Chromium start with the first HTML env and stop with the last close()."""

from __future__ import annotations

import gc
import urllib.error
import urllib.request
import weakref

import rollenv
from environments.webshop import browser
from tests.environments.webshop.conftest import needs_browser

pytestmark = needs_browser


def _serving(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError):
        return False


def test_two_envs_share_one_server_and_the_last_close_stops_it():
    # an env an earlier test left unclosed holds the shared server until it is freed; those in
    # reference cycles are freed only by the collector
    gc.collect()
    first, second = rollenv.make("WebShopHTML-v0"), rollenv.make("WebShopHTML-v0")
    first.reset(seed=0)
    second.reset(seed=1)
    url = first.unwrapped.server_url
    assert url == second.unwrapped.server_url and url.startswith("http://127.0.0.1:")
    assert first.unwrapped.session != second.unwrapped.session
    # stepping one env's browser page leaves the other's untouched
    before = second.unwrapped.render()
    first.step("<answer>search[blanket]</answer>")
    assert second.unwrapped.state.text == before
    first.close()
    assert _serving(url) and browser.browser_running()
    second.close()
    assert not _serving(url)
    assert not browser.browser_running()


def test_an_unclosed_env_is_freed_when_its_last_reference_goes():
    env = rollenv.make("WebShopHTML-v0")
    env.reset(seed=2)
    env.step("<answer>search[lamp]</answer>")
    alive = weakref.ref(env.unwrapped)
    # never closed and in no reference cycle: nothing may keep it (a browser call's frame once did)
    del env
    assert alive() is None  # its finalizer left its session and context for the next user
    other = rollenv.make("WebShopHTML-v0")
    other.reset(seed=0)
    url = other.unwrapped.server_url
    other.close()
    assert not _serving(url)
    assert not browser.browser_running()
