"""MCP tools: answer a question by calling the tools of a local stdio MCP server.

Ids:
    ``MCPTools-v0``: one to three calls (files, lookup tables, a calculator), then an answer.
    ``MCPToolsHard-v0``: only the questions that take two or three calls.

Needs the ``mcp`` SDK (``pip install 'rollenv[mcp]'``; without it the ids are listed by
``roll-agent envs --unavailable``); each env starts its own server process on its
first reset and stops it in ``close()``.
"""

from __future__ import annotations

ENTRY_POINT = "environments.mcp_tools.env:MCPToolsEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "MCPTools-v0": (
        "call an MCP server's tools (files, tables, calculator), then answer; 1-3 calls",
        6,
        {"difficulty": "mixed", "max_actions": 6},
    ),
    "MCPToolsHard-v0": (
        "call an MCP server's tools, then answer; questions that take 2-3 calls",
        6,
        {"difficulty": "hard", "max_actions": 6},
    ),
}


def register() -> None:
    """Registers the MCP tool ids with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: rollenv imports the entry points while it is itself being imported
    import importlib.util

    import rollenv

    missing = importlib.util.find_spec("mcp") is None
    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        if missing:
            reason = "needs the MCP SDK: pip install 'rollenv[mcp]'"
            rollenv.register_unavailable(env_id, reason, description=description)
            continue
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
