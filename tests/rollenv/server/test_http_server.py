"""The env server over plain HTTP and its WebSocket: sessions, replies, concurrency."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from websockets.sync.client import connect

import rollenv
from rollenv.policies import oracle_for


@pytest.fixture
def client(server_url: str):
    with httpx.Client(base_url=server_url, timeout=30) as client:
        yield client


def test_an_oracle_episode_over_http_matches_the_local_one(client: httpx.Client) -> None:
    local = rollenv.make("Sokoban-v0")
    observation, info = local.reset(seed=11)
    oracle = oracle_for(local)
    reply = client.post("/reset", json={"env_id": "Sokoban-v0", "seed": 11}).json()
    session_id = reply["session_id"]
    assert reply["observation"]["text"] == observation
    assert reply["observation"]["instruction"] == info["instruction"]
    assert (reply["reward"], reply["done"], reply["step_count"]) == (None, False, 0)
    steps = 0
    while not reply["done"]:
        action = oracle.act(observation, info)
        observation, reward, terminated, truncated, info = local.step(action)
        reply = client.post("/step", json={"session_id": session_id, "action": {"message": action}})
        reply = reply.json()
        steps += 1
        assert reply["observation"]["text"] == observation
        assert reply["reward"] == reward
        assert (reply["terminated"], reply["truncated"]) == (terminated, truncated)
        assert reply["observation"]["metrics"] == info["metrics"]
        assert reply["observation"]["info"] == info
    assert reply["observation"]["metrics"]["success"]
    state = client.get("/state", params={"session_id": session_id}).json()
    assert (state["step_count"], state["done"], state["env_id"]) == (steps, True, "Sokoban-v0")
    assert client.delete(f"/sessions/{session_id}").json() == {"closed": session_id}
    assert client.get("/state", params={"session_id": session_id}).status_code == 404


def test_a_reset_in_a_session_starts_a_new_episode_of_its_env(client: httpx.Client) -> None:
    first = client.post("/reset", json={"env_id": "FrozenLake-v0", "seed": 1}).json()
    session_id = first["session_id"]
    client.post("/step", json={"session_id": session_id, "action": "<answer>Down</answer>"})
    again = client.post("/reset", json={"session_id": session_id, "seed": 1}).json()
    assert again["session_id"] == session_id
    assert again["observation"]["text"] == first["observation"]["text"]
    assert again["step_count"] == 0 and again["episode_id"] != first["episode_id"]
    other = client.post("/reset", json={"session_id": session_id, "env_id": "Sokoban-v0"})
    assert other.status_code == 409 and "FrozenLake-v0" in other.json()["error"]["message"]


def test_the_service_endpoints_describe_the_server(client: httpx.Client) -> None:
    assert client.get("/health").json()["status"] == "healthy"
    listed = {env["id"] for env in client.get("/envs").json()["envs"]}
    assert listed == set(rollenv.registry)
    schema = client.get("/schema").json()
    assert schema["action"]["required"] == ["message"]
    assert {"text", "instruction", "metrics", "info"} <= set(schema["observation"]["properties"])
    assert {"episode_id", "step_count"} <= set(schema["state"]["properties"])


def test_one_session_steps_one_request_at_a_time(client: httpx.Client, server_url: str) -> None:
    session_id = client.post("/reset", json={"env_id": "ServerTestExploding-v0", "seed": 0})
    session_id = session_id.json()["session_id"]
    kwargs = {"json": {"session_id": session_id, "action": "no answer"}}

    def hammer() -> None:
        with httpx.Client(base_url=server_url, timeout=30) as own:
            for _ in range(15):
                assert own.post("/step", **kwargs).status_code == 200

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # a lost update between two unserialised steps would leave fewer than 60
    assert client.get("/state", params={"session_id": session_id}).json()["step_count"] == 60


def test_the_websocket_session_form(server_url: str) -> None:
    local = rollenv.make("Sokoban-v0")
    observation, _ = local.reset(seed=4)
    with connect(server_url.replace("http", "ws") + "/ws") as websocket:

        def send(message: dict | str) -> dict:
            websocket.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(websocket.recv(timeout=30))

        early = send({"type": "step", "data": {"message": "<answer>Up</answer>"}})
        assert early["type"] == "error" and early["data"]["code"] == "NOT_RESET"
        assert send("{not json")["data"]["code"] == "INVALID_JSON"
        assert "allowed: reset, step" in send({"type": "jump"})["data"]["message"]
        reset = send({"type": "reset", "data": {"env_id": "Sokoban-v0", "seed": 4}})
        assert reset["type"] == "observation"
        assert reset["data"]["observation"]["text"] == observation
        bad = send({"type": "step", "data": {"message": 7}})
        assert bad["data"]["code"] == "BAD_REQUEST" and "message" in bad["data"]["message"]
        stepped = send({"type": "step", "data": {"message": "<answer>Up</answer>"}})
        assert stepped["data"]["observation"]["text"] == local.step("<answer>Up</answer>")[0]
        assert send({"type": "state"})["data"]["step_count"] == 1
        session_id = reset["data"]["session_id"]
        replaced = send({"type": "reset", "data": {"env_id": "FrozenLake-v0", "seed": 0}})
        assert replaced["data"]["env_id"] == "FrozenLake-v0"
        assert replaced["data"]["session_id"] != session_id
        websocket.send(json.dumps({"type": "close"}))
    with httpx.Client(base_url=server_url) as client:
        gone = client.get("/state", params={"session_id": replaced["data"]["session_id"]})
        assert gone.status_code == 404  # closing the connection closed its session
