"""Bad input gets one clear JSON error each, and the server keeps serving afterwards."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.rollenv.server.exploding_env import (
    BROKEN_ID,
    EXPLODING_ID,
    UNAVAILABLE_ID,
    UNAVAILABLE_REASON,
)


@pytest.fixture
def client(server_url: str):
    with httpx.Client(base_url=server_url, timeout=30) as client:
        yield client


def _error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    return error


def _still_serving(client: httpx.Client) -> None:
    reply = client.post("/reset", json={"env_id": "Sokoban-v0", "seed": 0})
    assert reply.status_code == 200
    client.delete(f"/sessions/{reply.json()['session_id']}")


def test_an_unknown_id_names_the_close_matches(client: httpx.Client) -> None:
    error = _error(client.post("/reset", json={"env_id": "Sokoban-v9"}), 404, "UNKNOWN_ENV")
    assert error["close_matches"][0] == "Sokoban-v0"
    assert "Did you mean" in error["message"]
    _still_serving(client)


def test_an_env_whose_data_is_missing_says_why(client: httpx.Client) -> None:
    response = client.post("/reset", json={"env_id": UNAVAILABLE_ID})
    error = _error(response, 424, "ENV_UNAVAILABLE")
    assert error["reason"] == UNAVAILABLE_REASON and UNAVAILABLE_REASON in error["message"]
    _still_serving(client)


@pytest.mark.parametrize(
    ("path", "body", "status", "code", "named"),
    [
        ("/reset", b'{"env_id": "Sokoban-v0",', 400, "INVALID_JSON", "not valid JSON"),
        ("/reset", b'["Sokoban-v0"]', 422, "BAD_REQUEST", "the body"),
        ("/reset", b'{"env_id": "Sokoban-v0", "seed": "3"}', 422, "BAD_REQUEST", "seed"),
        ("/reset", b'{"env_id": "Sokoban-v0", "seed": -1}', 422, "BAD_REQUEST", "seed"),
        ("/reset", b'{"env_id": 5}', 422, "BAD_REQUEST", "env_id"),
        ("/reset", b'{"env": "Sokoban-v0"}', 422, "BAD_REQUEST", "allowed: env_id"),
        ("/reset", b"{}", 422, "BAD_REQUEST", "env_id: required"),
        ("/step", b'{"action": "<answer>Up</answer>"}', 422, "BAD_REQUEST", "session_id"),
        ("/step", b'{"session_id": "x"}', 422, "BAD_REQUEST", "action: required"),
        ("/step", b'{"session_id": "x", "action": [1]}', 422, "BAD_REQUEST", "reply text"),
        ("/step", b'{"session_id": "x", "action": {"msg": "hi"}}', 422, "BAD_REQUEST", "msg"),
        ("/sessions", b'{"kwargs": {}}', 422, "BAD_REQUEST", "env_id: required"),
    ],
)
def test_a_malformed_request_names_the_problem(
    client: httpx.Client, path: str, body: bytes, status: int, code: str, named: str
) -> None:
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    assert named in _error(response, status, code)["message"]
    _still_serving(client)


def test_bad_env_kwargs_list_the_allowed_ones(client: httpx.Client) -> None:
    body = {"env_id": "Sokoban-v0", "kwargs": {"num_boxs": 2}}
    error = _error(client.post("/reset", json=body), 422, "BAD_ENV_KWARGS")
    assert "num_boxs" in error["message"] and "num_boxes" in error["allowed"]
    _still_serving(client)


def test_an_unknown_session_is_404(client: httpx.Client) -> None:
    body = {"session_id": "no-such-session", "action": "<answer>Up</answer>"}
    error = _error(client.post("/step", json=body), 404, "UNKNOWN_SESSION")
    assert "no-such-session" in error["message"]
    _error(client.get("/state", params={"session_id": "nope"}), 404, "UNKNOWN_SESSION")
    _error(client.delete("/sessions/nope"), 404, "UNKNOWN_SESSION")
    _error(client.get("/state"), 422, "BAD_REQUEST")
    _still_serving(client)


def test_a_step_before_any_reset_is_409(client: httpx.Client) -> None:
    session_id = client.post("/sessions", json={"env_id": "Sokoban-v0"}).json()["session_id"]
    body = {"session_id": session_id, "action": "<answer>Up</answer>"}
    _error(client.post("/step", json=body), 409, "NOT_RESET")
    assert client.post("/reset", json={"session_id": session_id}).status_code == 200
    assert client.post("/step", json=body).status_code == 200


def test_an_env_that_raises_costs_only_its_session(client: httpx.Client) -> None:
    session_id = client.post("/reset", json={"env_id": EXPLODING_ID}).json()["session_id"]
    body = {"session_id": session_id, "action": "<answer>boom</answer>"}
    error = _error(client.post("/step", json=body), 500, "ENV_FAILED")
    assert "RuntimeError" in error["message"] and "the counter exploded" in error["message"]
    _error(client.post("/step", json=body), 404, "UNKNOWN_SESSION")  # dropped
    assert client.get("/health").json()["status"] == "healthy"
    _still_serving(client)


def test_an_env_that_cannot_be_made_is_500_with_its_error(client: httpx.Client) -> None:
    error = _error(client.post("/reset", json={"env_id": BROKEN_ID}), 500, "ENV_FAILED")
    assert "RuntimeError: the level file is corrupt" in error["message"]
    _still_serving(client)


def test_sessions_expire_when_idle(small_server) -> None:
    url, store = small_server
    with httpx.Client(base_url=url, timeout=30) as client:
        session_id = client.post("/reset", json={"env_id": "Sokoban-v0"}).json()["session_id"]
        deadline = time.monotonic() + 10
        while session_id in store and time.monotonic() < deadline:
            time.sleep(0.05)
        body = {"session_id": session_id, "action": "<answer>Up</answer>"}
        error = _error(client.post("/step", json=body), 410, "SESSION_EXPIRED")
        assert "0.4 s" in error["message"]
        _still_serving(client)


def test_a_full_server_refuses_new_sessions_until_one_closes(small_server) -> None:
    url, _ = small_server
    with httpx.Client(base_url=url, timeout=30) as client:
        first, second = (
            client.post("/sessions", json={"env_id": "FrozenLake-v0"}).json()["session_id"]
            for _ in range(2)
        )
        error = _error(
            client.post("/reset", json={"env_id": "Sokoban-v0"}), 503, "CAPACITY_REACHED"
        )
        assert "2 sessions" in error["message"]
        client.delete(f"/sessions/{first}")
        _still_serving(client)
        client.delete(f"/sessions/{second}")
