"""tiny-random behind a real ``roll-agent serve`` on 127.0.0.1, for the tests of ``openai:``
players and models."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def served_tiny_random(port: int) -> Iterator[str]:
    """Serves tiny-random on ``port`` until the block ends; yields its ``openai:`` name once
    its socket listens."""
    command = [sys.executable, "-m", "trainer.cli", "serve", "--model", "tiny-random"]
    server = subprocess.Popen(
        [*command, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:  # printed once its socket listens
            if line.startswith("Serving tiny-random at"):
                break
        else:
            pytest.fail(f"roll-agent serve ended with {server.wait()}")
        yield f"openai:http://127.0.0.1:{port}/v1#tiny-random"
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
