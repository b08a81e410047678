"""``ChatHistory``: keeps an episode as chat messages, ready for a chat template.

The system message is the env's instruction; each turn adds the observation as a user message
and the agent's reply as an assistant message. With ``window=N`` only the last N turns are kept
(as verl-agent's GiGPO prompts do); with ``window=None`` the whole trajectory is (StarPO).

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

from typing import Any

import gymnasium as gym

Message = dict[str, str]


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
        self._turns: list[tuple[Message, Message]] = []
        self._pending: Message = {"role": "user", "content": ""}

    @property
    def messages(self) -> list[Message]:
        """System message, the kept turns, and the current observation as the last user message."""
        turns = (
            self._turns
            if self.window is None
            else self._turns[-self.window :]
            if self.window
            else []
        )
        chat = [self._system]
        for user, assistant in turns:
            chat += [user, assistant]
        return chat + [self._pending]

    def reset(self, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._system = {"role": "system", "content": info.get("instruction", "")}
        self._turns = []
        self._pending = {"role": "user", "content": obs}
        info["messages"] = self.messages
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._turns.append((self._pending, {"role": "assistant", "content": action}))
        content = f"Reward: {reward:g}\n{obs}" if self.show_reward else obs
        self._pending = {"role": "user", "content": content}
        info["messages"] = self.messages
        return obs, reward, terminated, truncated, info
