"""A Sokoban agent written with the ``openai`` SDK alone: it acts through the env's ``move``
tool, every reply a call (``tool_choice="required"``), and shows the model the rules, its last
move and where it stands now. Train it from the repository's root (the config names it):

    roll-agent train --env SimpleSokoban-v0 --config examples/sokoban_tool_agent.yaml
"""

from __future__ import annotations

import json

SYSTEM = (
    "You are solving Sokoban. Push every box onto a target. You push a box by walking into "
    "it; you cannot pull. Each turn you are told what is one step Up, Down, Left and Right of "
    "you, where the box is from you, and where its target is from the box. Move with the "
    "move tool, one call a turn."
)
MAX_TURNS = 10


async def play(env, llm) -> None:
    """Plays one episode of ``env`` (a Sokoban env whose actions are tool calls)."""
    obs, info = env.reset()
    last_turn: list[dict] = []  # the previous position, the move made there and its result
    for _ in range(MAX_TURNS):
        messages = [{"role": "system", "content": SYSTEM}, *last_turn]
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
