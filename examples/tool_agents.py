"""Agents written with the ``openai`` SDK alone that act through an env's tools: every reply a
call (``tool_choice="required"``), the model shown the rules, its previous position, the move it
made there and where it stands now. Train one from the repository's root (its config names it):

    roll-agent train --env FrozenLake-v0 --config examples/frozenlake_tool_agent.yaml
"""

from __future__ import annotations

import json

MAX_TURNS = 10
SOKOBAN = (
    "You are solving Sokoban. Push every box onto a target. You push a box by walking into "
    "it; you cannot pull. Each turn you are told what is one step Up, Down, Left and Right of "
    "you, where the box is from you, and where its target is from the box. Move with the "
    "move tool, one call a turn."
)
FROZEN_LAKE = (
    "You are playing FrozenLake. Walk from your position to the goal without stepping into a "
    "hole. Symbols: P player, _ frozen ice, O hole, G goal, X player in a hole, √ player on "
    "the goal. Move with the move tool, one call a turn."
)


async def play(env, llm, system: str) -> None:
    """Plays one episode of ``env`` (an env whose actions are calls of its tools)."""
    obs, info = env.reset()
    last_turn: list[dict] = []  # the previous position, the move made there and its result
    for _ in range(MAX_TURNS):
        messages = [{"role": "system", "content": system}, *last_turn]
        if not last_turn:
            messages.append({"role": "user", "content": obs})
        reply = await llm.chat.completions.create(
            model="policy",
            messages=messages,
            tools=info["tools"],
            tool_choice="required",
            parallel_tool_calls=False,
        )
        move = reply.choices[0].message.model_dump(exclude_none=True)
        before = obs
        obs, _, terminated, truncated, info = env.step(json.dumps(move))
        if terminated or truncated:
            return
        last_turn = [{"role": "user", "content": before}, move, *info["tool_messages"]]


async def sokoban(env, llm) -> None:
    """Plays SimpleSokoban-v0 (``observation: relative``) through its ``move`` tool."""
    await play(env, llm, SOKOBAN)


async def frozen_lake(env, llm) -> None:
    """Plays FrozenLake-v0 through its ``move`` tool."""
    await play(env, llm, FROZEN_LAKE)
