"""``ChatHistory``: keeps an episode as chat messages, ready for a chat template.

The system message is the env's instruction; each turn adds the observation as a user message
and the agent's reply as an assistant message. With ``window=N`` only the last N turns are kept
(as verl-agent's GiGPO prompts do); with ``window=None`` the whole trajectory is (StarPO).

An env in the ``tools`` action format (``rollenv.make(..., action_format="tools")``) is kept as
an OpenAI tool chat: each reply is the assistant message the agent sent (with its
``tool_calls``), followed by the ``role: tool`` messages that answer it (the reward, if shown,
starts the last of them); ``info["tools"]`` holds the tools for the next prompt.

Example:
    >>> import rollenv
    >>> from rollenv.wrappers import ChatHistory
    >>> env = ChatHistory(rollenv.make("Sokoban-v0"), window=2)
    >>> obs, info = env.reset(seed=0)
    >>> [m["role"] for m in info["messages"]]
    ['system', 'user']
    >>> obs, *_, info = env.step("<answer>Up</answer>")
    >>> [m["role"] for m in info["messages"]]
    ['system', 'user', 'assistant', 'user']
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

Message = dict[str, Any]


class ChatHistory(gym.Wrapper[str, str, str, str]):
    """Adds ``info["messages"]``, the chat to send to the model for the next reply.

    Args:
        env: a text env.
        window: how many past turns (observation and reply) to keep; ``None`` keeps all.
        show_reward: whether each new user message starts with the last step's reward.
    """

    def __init__(self, env: gym.Env[str, str], window: int | None = None, show_reward: bool = True):
        if window is not None and window < 0:
            raise ValueError(f"ChatHistory window must be >= 0 or None, got {window}")
        super().__init__(env)
        self.window = window
        self.show_reward = show_reward
        self._system: Message = {"role": "system", "content": ""}
        # each kept turn: the messages the agent read, then its reply
        self._turns: list[tuple[list[Message], Message]] = []
        self._pending: list[Message] = [{"role": "user", "content": ""}]

    @property
    def messages(self) -> list[Message]:
        """System message, the kept turns, and the messages the next reply answers."""
        turns = (
            self._turns
            if self.window is None
            else self._turns[-self.window :]
            if self.window
            else []
        )
        chat = [self._system]
        for read, reply in turns:
            chat += [*read, reply]
        return chat + self._pending

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._system = {"role": "system", "content": info.get("instruction", "")}
        self._turns = []
        self._pending = [{"role": "user", "content": obs}]
        info["messages"] = self.messages
        return obs, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        shown = f"Reward: {reward:g}\n" if self.show_reward else ""
        if "tool_messages" in info:  # the tools format: the reply is a message, answered by tools
            self._turns.append((self._pending, _assistant_message(action)))
            answers = [dict(m) for m in info["tool_messages"]]
            answers[-1]["content"] = shown + str(answers[-1]["content"])
            self._pending = answers
        else:
            self._turns.append((self._pending, {"role": "assistant", "content": action}))
            self._pending = [{"role": "user", "content": shown + obs}]
        info["messages"] = self.messages
        return obs, reward, terminated, truncated, info


def _assistant_message(action: Any) -> Message:
    """The assistant message an action in the tools format stands for (its text as content
    where it is not one)."""
    if isinstance(action, dict):
        return {"role": "assistant", **action}
    try:
        message = json.loads(action)
    except (TypeError, ValueError, RecursionError):
        return {"role": "assistant", "content": str(action)}
    if not isinstance(message, dict):
        return {"role": "assistant", "content": str(action)}
    return {**message, "role": "assistant"}
