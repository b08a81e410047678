"""``BabyAIOracle``: BabyAI's own bot (``minigrid.utils.baby_ai_bot.BabyAIBot``) acting in text.

The bot is privileged: it reads MiniGrid's full grid (it explores cells it has not seen, but
knows the level's objects and the mission's parsed form). It keeps a plan across turns, so the
oracle builds one per episode and tells it the action the env really executed. A reply that
executed nothing (invalid in another policy's hands) leaves the bot where it was: the oracle
then answers as it did before, without replanning.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from minigrid.utils.baby_ai_bot import BabyAIBot

from environments.babyai.env import ACTION_NAMES, BabyAIEnv


class BabyAIOracle:
    """Plays the action BabyAI's bot suggests, one per reply."""

    def __init__(self, env: gym.Env):
        inner = env.unwrapped
        if not isinstance(inner, BabyAIEnv):
            raise TypeError(f"BabyAIOracle needs a BabyAIEnv, got {type(inner).__name__}")
        self._env = inner
        self._bot: BabyAIBot | None = None
        self._episode = -1
        self._seen_actions = -1
        self._reply = ""

    def act(self, observation: str, info: dict[str, Any]) -> str:
        env = self._env
        if env.episode_index != self._episode:
            self._bot, self._episode = BabyAIBot(env.minigrid), env.episode_index
            action = self._bot.replan()
        elif env.actions_taken == self._seen_actions:
            return self._reply  # nothing was executed since the last reply
        else:
            action = self._bot.replan(env.last_action)
        self._seen_actions = env.actions_taken
        self._reply = env.answer_format.wrap(ACTION_NAMES[int(action)])
        return self._reply
