"""Load on the env server: many sessions at once over HTTP from 127.0.0.1, against local steps.

What is measured:

* **over HTTP**: ``roll-agent serve-env`` is started as a subprocess on 127.0.0.1 (a free port).
  ``--sessions`` clients (asyncio tasks, one keep-alive connection each) each open a session on
  ``--env`` and play episodes for ``--seconds``: reset with the next seed, then replies drawn by
  ``rollenv.policies.RandomPolicy`` (seeded by the episode's seed) until the episode ends.
  Every ``POST /step`` is timed from send to parsed reply; resets are not counted as steps. An
  error is any reply other than 200 or any exception (a timeout, a dropped connection). steps/s
  is the steps of all sessions divided by the wall time.

  The clients speak HTTP/1.1 through :class:`KeepAliveConnection`, a few lines over asyncio's
  streams (``--client raw``, the default), because the clients share the machine with the
  server: ``httpx.AsyncClient`` (``--client httpx``) spent about 3 ms of CPU per request here,
  three times the server's, so it measured mostly itself.
* **in process**: the same episodes (the same seeds and replies) are then stepped on a local env
  in this process, one after the other, each ``env.step`` timed on its own; steps/s is the steps
  divided by the summed step times. Each local step's observation, reward and flags are checked
  against what the server replied (``mismatches`` must be 0).

The ratio is the server's steps/s over the local steps/s: what serving costs per step, with the
server, its clients and the local replay sharing this machine's cores (the load average before
and after is recorded).

Run (from the repository root)::

    python benchmarks/env_server_load.py --quick           # 16 sessions for 5 s
    python benchmarks/env_server_load.py                   # 64 sessions for 60 s, Sokoban-v0
    python benchmarks/env_server_load.py --env FrozenLake-v0 --seconds 30 --json /tmp/fl.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import httpx  # noqa: E402

import rollenv  # noqa: E402
from rollenv.policies import RandomPolicy  # noqa: E402

SEEDS_PER_SESSION = 1_000_000  # session i plays seeds i * this, i * this + 1, ...


@dataclass
class Episode:
    """One episode a session played: its seed, replies, and each step's outcome."""

    seed: int
    replies: list[str] = field(default_factory=list)
    outcomes: list[tuple[str, float, bool, bool]] = field(default_factory=list)


@dataclass
class SessionLoad:
    """What one client session did over HTTP."""

    episodes: list[Episode] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    reset_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class KeepAliveConnection:
    """One HTTP/1.1 keep-alive connection that sends JSON requests and reads JSON replies with
    a Content-Length (all the env server sends)."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port = host, int(port)
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if self._streams is None:
            self._streams = await asyncio.open_connection(self.host, self.port)
            self._streams[1].get_extra_info("socket").setsockopt(
                socket.IPPROTO_TCP, socket.TCP_NODELAY, 1
            )
        reader, writer = self._streams
        payload = b"" if body is None else json.dumps(body).encode()
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            + payload
        )
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return int(status_line.split()[1]), json.loads(await reader.readexactly(length))

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()


class HttpxConnection:
    """The same requests through a shared ``httpx.AsyncClient`` (``--client httpx``)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        response = await self._client.request(method, path, json=body)
        return response.status_code, response.json()

    async def close(self) -> None:
        pass


def start_server(sessions: int, workers: int) -> tuple[subprocess.Popen[str], str]:
    """``roll-agent serve-env`` on a free port of 127.0.0.1; returns it and its base URL."""
    command = [sys.executable, "-m", "trainer.cli", "serve-env", "--port", "0"]
    command += ["--max-sessions", str(sessions + 8), "--workers", str(workers)]
    server = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    banner = server.stdout.readline() if server.stdout else ""
    found = re.search(r"http://[\d.]+:\d+", banner)
    if found is None:
        server.kill()
        raise RuntimeError(f"roll-agent serve-env did not start: {banner!r}")
    return server, found.group(0)


async def play_session(
    connection: KeepAliveConnection | HttpxConnection, env_id: str, index: int, deadline: float
) -> SessionLoad:
    """One client: episodes of random valid replies until ``deadline`` (perf_counter)."""
    load = SessionLoad()
    policy_env = rollenv.make(env_id)  # only for RandomPolicy's action words and format
    session_id: str | None = None
    seed = index * SEEDS_PER_SESSION
    try:
        while time.perf_counter() < deadline:
            body: dict[str, Any] = {"seed": seed}
            body.update({"session_id": session_id} if session_id else {"env_id": env_id})
            started = time.perf_counter()
            status, reply = await connection.request("POST", "/reset", body)
            load.reset_seconds.append(time.perf_counter() - started)
            if status != 200:
                load.errors.append(f"reset {status}: {reply}")
                return load
            session_id = reply["session_id"]
            episode = Episode(seed)
            load.episodes.append(episode)
            policy = RandomPolicy(policy_env, seed=seed)
            while not reply["done"] and time.perf_counter() < deadline:
                action = policy.act(reply["observation"]["text"], reply["observation"]["info"])
                started = time.perf_counter()
                status, reply = await connection.request(
                    "POST", "/step", {"session_id": session_id, "action": action}
                )
                load.step_seconds.append(time.perf_counter() - started)
                if status != 200:
                    load.errors.append(f"step {status}: {reply}")
                    break
                episode.replies.append(action)
                episode.outcomes.append(
                    (
                        reply["observation"]["text"],
                        reply["reward"],
                        reply["terminated"],
                        reply["truncated"],
                    )
                )
            seed += 1
        if session_id is not None:
            await connection.request("DELETE", f"/sessions/{session_id}")
    except (OSError, ValueError, asyncio.IncompleteReadError, httpx.HTTPError) as error:
        load.errors.append(f"{type(error).__name__}: {error}")
    finally:
        await connection.close()
    return load


async def load_server(
    url: str, env_id: str, sessions: int, seconds: float, client: str = "raw"
) -> list[SessionLoad]:
    """``sessions`` clients at once for ``seconds``, through ``client`` (raw or httpx)."""
    no_delay = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    transport = httpx.AsyncHTTPTransport(
        socket_options=[no_delay],
        limits=httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions),
    )
    async with httpx.AsyncClient(base_url=url, timeout=60, transport=transport) as shared:
        connections = [
            KeepAliveConnection(url) if client == "raw" else HttpxConnection(shared)
            for _ in range(sessions)
        ]
        deadline = time.perf_counter() + seconds
        tasks = [
            play_session(connection, env_id, index, deadline)
            for index, connection in enumerate(connections)
        ]
        return await asyncio.gather(*tasks)


def replay_locally(env_id: str, loads: list[SessionLoad]) -> tuple[list[float], int]:
    """Steps every episode again in this process; returns each step's seconds and how many
    outcomes differ from the server's."""
    env = rollenv.make(env_id)
    step_seconds: list[float] = []
    mismatches = 0
    for load in loads:
        for episode in load.episodes:
            env.reset(seed=episode.seed)
            for reply, remote in zip(episode.replies, episode.outcomes, strict=True):
                started = time.perf_counter()
                observation, reward, terminated, truncated, _ = env.step(reply)
                step_seconds.append(time.perf_counter() - started)
                mismatches += (observation, reward, terminated, truncated) != remote
    return step_seconds, mismatches


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux's /proc; else ``None``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="Sokoban-v0", help="the env id (Sokoban-v0)")
    parser.add_argument("--sessions", type=int, default=64, help="sessions at once (64)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to load (60)")
    parser.add_argument("--workers", type=int, default=8, help="the server's env threads (8)")
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="the clients' HTTP: raw asyncio streams (default) or httpx.AsyncClient",
    )
    add_common_arguments(
        parser, default_json=RESULTS_DIR / "env_server_load.json", quick="16 sessions for 5 s"
    )
    args = parse_arguments(parser, argv, quick_defaults={"sessions": 16, "seconds": 5.0})

    load_before = os.getloadavg()
    server, url = start_server(args.sessions, args.workers)
    try:
        server_cpu_before, client_cpu_before = cpu_seconds(server.pid), time.process_time()
        started = time.perf_counter()
        loads = asyncio.run(load_server(url, args.env, args.sessions, args.seconds, args.client))
        wall = time.perf_counter() - started
        server_cpu_after, client_cpu = cpu_seconds(server.pid), time.process_time()
    finally:
        server.terminate()
        server.wait(timeout=60)
    load_after = os.getloadavg()
    local_seconds, mismatches = replay_locally(args.env, loads)

    step_seconds = [s for load in loads for s in load.step_seconds]
    reset_seconds = [s for load in loads for s in load.reset_seconds]
    errors = [error for load in loads for error in load.errors]
    episodes = sum(len(load.episodes) for load in loads)
    remote_rate = len(step_seconds) / wall
    requests = len(step_seconds) + len(reset_seconds)
    server_cpu = (
        None
        if server_cpu_before is None or server_cpu_after is None
        else server_cpu_after - server_cpu_before
    )
    local_rate = len(local_seconds) / sum(local_seconds) if local_seconds else float("nan")
    figures = {
        "env_id": args.env,
        "sessions": args.sessions,
        "seconds": args.seconds,
        "server_workers": args.workers,
        "client": args.client,
        "wall_seconds": wall,
        "http": {
            "steps": len(step_seconds),
            "episodes": episodes,
            "errors": len(errors),
            "first_errors": errors[:5],
            "steps_per_second": remote_rate,
            "step_p50_ms": 1000 * statistics.median(step_seconds),
            "step_p99_ms": 1000 * percentile(step_seconds, 0.99),
            "reset_p50_ms": 1000 * statistics.median(reset_seconds),
            # CPU per request (steps and resets) of the server process and of the clients
            "server_cpu_ms_per_request": server_cpu and 1000 * server_cpu / requests,
            "client_cpu_ms_per_request": 1000 * (client_cpu - client_cpu_before) / requests,
        },
        "local": {
            "steps": len(local_seconds),
            "steps_per_second": local_rate,
            "step_p50_ms": 1000 * statistics.median(local_seconds),
            "step_p99_ms": 1000 * percentile(local_seconds, 0.99),
        },
        "mismatches": mismatches,
        "http_over_local_steps_per_second": remote_rate / local_rate,
        "load_average_before": load_before,
        "load_average_after": load_after,
    }
    http, local = figures["http"], figures["local"]
    print_table(
        ["where", "steps", "errors", "steps/s", "p50 ms", "p99 ms"],
        [
            [
                f"HTTP, {args.sessions} sessions",
                str(http["steps"]),
                str(http["errors"]),
                f"{remote_rate:,.0f}",
                f"{http['step_p50_ms']:.2f}",
                f"{http['step_p99_ms']:.2f}",
            ],
            [
                "in process",
                str(local["steps"]),
                "-",
                f"{local_rate:,.0f}",
                f"{local['step_p50_ms']:.3f}",
                f"{local['step_p99_ms']:.3f}",
            ],
        ],
        f"{args.env}: {args.seconds:g} s over HTTP from 127.0.0.1 (ratio HTTP/local steps/s "
        f"{figures['http_over_local_steps_per_second']:.3f}; {mismatches} mismatches; load "
        f"{load_before[0]:.1f} before, {load_after[0]:.1f} after)",
    )
    write_report(args.json, figures, ["fastapi", "uvicorn", "httpx", "gymnasium"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
