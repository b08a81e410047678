"""An MCP client session plays an episode against ``roll-agent serve-env --mcp`` over stdio."""

from __future__ import annotations

import asyncio
import shutil
import sys
from typing import Any

import pytest

import rollenv
from rollenv.policies import oracle_for

mcp = pytest.importorskip("mcp", reason="needs the mcp SDK")


def _server_command() -> tuple[str, list[str]]:
    installed = shutil.which("roll-agent")
    if installed:
        return installed, ["serve-env", "--mcp"]
    return sys.executable, ["-m", "trainer.cli", "serve-env", "--mcp"]


async def _play_over_stdio() -> dict[str, Any]:
    command, args = _server_command()
    parameters = mcp.StdioServerParameters(command=command, args=args)
    local = rollenv.make("Sokoban-v0")
    observation, info = local.reset(seed=9)
    oracle = oracle_for(local)
    found: dict[str, Any] = {"observations": [], "local": [observation]}
    async with (
        mcp.stdio_client(parameters) as (read, write),
        mcp.ClientSession(read, write) as session,
    ):
        await session.initialize()
        found["tools"] = {tool.name for tool in (await session.list_tools()).tools}
        listed = await session.call_tool("list_envs", {"family": "sokoban"})
        found["listed"] = {env["id"] for env in listed.structured_content["envs"]}
        unknown = await session.call_tool("reset", {"env_id": "Sokobn-v0"})
        found["unknown"] = (unknown.is_error, unknown.content[0].text)
        reply = await session.call_tool("reset", {"env_id": "Sokoban-v0", "seed": 9})
        reply = reply.structured_content
        session_id = reply["session_id"]
        found["observations"].append(reply["observation"]["text"])
        rules = await session.call_tool("instruction", {"session_id": session_id})
        found["instruction"] = (rules.structured_content or {}).get("result")
        while not reply["done"]:
            action = oracle.act(observation, info)
            observation, reward, terminated, truncated, info = local.step(action)
            found["local"].append(observation)
            step = await session.call_tool("step", {"session_id": session_id, "reply": action})
            reply = step.structured_content
            found["observations"].append(reply["observation"]["text"])
        found["success"] = reply["observation"]["metrics"]["success"]
        await session.call_tool("close", {"session_id": session_id})
        gone = await session.call_tool("step", {"session_id": session_id, "reply": "x"})
        found["gone"] = (gone.is_error, gone.content[0].text)
    found["local_instruction"] = rollenv.make("Sokoban-v0").reset(seed=9)[1]["instruction"]
    return found


def test_an_mcp_client_plays_sokoban_to_success_over_stdio() -> None:
    found = asyncio.run(asyncio.wait_for(_play_over_stdio(), timeout=120))
    assert found["tools"] == {"list_envs", "reset", "step", "instruction", "close"}
    assert "Sokoban-v0" in found["listed"] and "FrozenLake-v0" not in found["listed"]
    assert found["unknown"][0] and "UNKNOWN_ENV: No rollenv environment" in found["unknown"][1]
    assert "Did you mean: 'Sokoban-v0'" in found["unknown"][1]
    assert found["observations"] == found["local"]
    assert found["success"]
    assert found["instruction"] == found["local_instruction"]
    assert found["gone"][0] and "UNKNOWN_SESSION: no session" in found["gone"][1]
