"""Fixtures the trainer's tests share: a real local Ray cluster, and a judge endpoint that never
answers (an OpenAI-compatible API root on 127.0.0.1 that lists a model and holds every
completion for 30 s)."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest


@pytest.fixture(scope="module")
def ray_cluster():
    """A real local Ray cluster of 2 CPUs for the module's tests, shut down after them."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


class _HangingHandler(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible API root that lists a model and never answers a completion."""

    def do_GET(self):  # noqa: N802
        body = json.dumps({"object": "list", "data": [{"id": "judge", "object": "model"}]})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):  # noqa: N802
        time.sleep(30)

    def log_message(self, *args):
        pass


@pytest.fixture
def hanging_server():
    """The hanging endpoint's ``/v1`` URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HangingHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
