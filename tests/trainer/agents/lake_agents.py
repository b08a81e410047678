"""Agent programs the training tests name as ``agent.function``: written with the ``openai``
SDK alone, as a user's agent would be."""

from __future__ import annotations

import json


async def tool_agent(env, llm):
    """Moves through the env's tools, every reply a call (``tool_choice="required"``)."""
    obs, info = env.reset()
    messages = [
        {"role": "system", "content": info["instruction"]},
        {"role": "user", "content": obs},
    ]
    for _ in range(3):
        reply = await llm.chat.completions.create(
            model="policy",
            messages=messages,
            tools=info["tools"],
            tool_choice="required",
            parallel_tool_calls=False,  # the env runs one move a turn
        )
        sent = reply.choices[0].message.model_dump(exclude_none=True)
        obs, reward, terminated, truncated, info = env.step(json.dumps(sent))
        if terminated or truncated:
            return
        messages += [sent, *info["tool_messages"]]
