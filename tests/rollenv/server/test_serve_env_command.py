"""``roll-agent serve-env``: the real command, as a user starts it."""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys

import httpx

import rollenv


def _command(*args: str) -> list[str]:
    installed = shutil.which("roll-agent")
    return [installed, *args] if installed else [sys.executable, "-m", "trainer.cli", *args]


def test_serve_env_serves_every_id_and_its_default_env_until_ctrl_c() -> None:
    server = subprocess.Popen(
        _command("serve-env", "--port", "0", "--env", "frozenlake"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = server.stdout.readline()
        url = re.search(r"http://[\d.]+:\d+", banner).group(0)
        with httpx.Client(base_url=url, timeout=30) as client:
            listed = {env["id"] for env in client.get("/envs").json()["envs"]}
            # every id a family registers (this process also has ids tests registered directly)
            assert {i for i, spec in rollenv.registry.items() if spec.family} <= listed
            reply = client.post("/reset", json={"seed": 5}).json()  # no env_id: the default
            assert reply["env_id"] == "FrozenLake-v0"
            assert reply["observation"]["text"] == rollenv.make("FrozenLake-v0").reset(seed=5)[0]
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 130  # roll-agent's status for Ctrl-C
        assert "Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()


def test_a_taken_port_is_one_line_and_status_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            _command("serve-env", "--port", str(port)), capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
