"""Real env servers on 127.0.0.1 (uvicorn in a thread, a free port) and test-only envs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rollenv
from rollenv.server import SessionStore
from rollenv.server.http_app import build_app
from rollenv.server.serving import serve_in_thread
from tests.rollenv.server.exploding_env import (
    BROKEN_ID,
    EXPLODING_ID,
    UNAVAILABLE_ID,
    UNAVAILABLE_REASON,
    ExplodingEnv,
    broken_env,
)


@pytest.fixture(scope="module")
def test_envs() -> Iterator[None]:
    """Registers the test-only ids for one test module, and removes them after."""
    rollenv.register(EXPLODING_ID, ExplodingEnv, max_episode_steps=20)
    rollenv.register(BROKEN_ID, broken_env)
    rollenv.registration.register_unavailable(UNAVAILABLE_ID, UNAVAILABLE_REASON)
    yield
    # the registry has no public removal: other tests that list every id must not see these
    rollenv.registry._remove(EXPLODING_ID)
    rollenv.registry._remove(BROKEN_ID)
    rollenv.registry._unavailable.pop(UNAVAILABLE_ID, None)


@pytest.fixture(scope="module")
def server_url(test_envs: None) -> Iterator[str]:
    """A server for one test module: 64 sessions at most, idle ones closed after 60 s."""
    with serve_in_thread(build_app(SessionStore(max_sessions=64, idle_timeout=60))) as url:
        yield url


@pytest.fixture(scope="module")
def small_server() -> Iterator[tuple[str, SessionStore]]:
    """A server that holds 2 sessions and closes them after 0.4 s idle (swept every 0.05 s)."""
    store = SessionStore(max_sessions=2, idle_timeout=0.4)
    with serve_in_thread(build_app(store, reap_interval=0.05)) as url:
        yield url, store
