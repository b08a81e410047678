"""Opponent specs, and the OpenAI-compatible opponent against a real local HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from environments.textarena.opponents import RandomOpponent, make_opponent


@pytest.mark.parametrize(
    "spec",
    ["minimax", "openai:", "openai:not-a-url:model", "openai:http://127.0.0.1:8000/v1:", 3],
)
def test_bad_opponent_specs_are_one_clear_error(spec):
    with pytest.raises(ValueError, match="openai:<base_url>:<model>"):
        make_opponent(spec)


def test_openai_spec_splits_at_the_last_colon():
    opponent = make_opponent("openai:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-0.5B")
    assert (opponent.base_url, opponent.model) == ("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-0.5B")


def test_random_opponent_is_seeded():
    first, second = RandomOpponent(), RandomOpponent()
    first.reset(5)
    second.reset(5)
    candidates = [f"[{i}]" for i in range(9)]
    assert first.moves(1, "", "", candidates) == second.moves(1, "", "", candidates)
    assert sorted(first.moves(1, "", "", candidates)) == sorted(candidates)


class _ChatServer(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _ChatServer.requests.append({"path": self.path, "body": body})
        reply = {
            "id": "1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "The center is best: [4]"},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def chat_server():
    pytest.importorskip("openai")
    _ChatServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_openai_opponent_plays_the_servers_move(chat_server):
    pytest.importorskip("textarena")
    import rollenv

    env = rollenv.make(
        "textarena/TicTacToe-v0", agent_seat=1, opponent=f"openai:{chat_server}:tiny-model"
    )
    obs, info = env.reset(seed=0)
    (request,) = _ChatServer.requests
    assert request["path"] == "/v1/chat/completions"
    body = request["body"]
    assert body["model"] == "tiny-model"
    assert body["messages"][0]["role"] == "system"
    assert "You are Player 0 in Tic Tac Toe" in body["messages"][0]["content"]
    assert "Available Moves" in body["messages"][1]["content"]
    assert "placed their symbol (O) in cell 4" in obs
