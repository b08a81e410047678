"""``StepRecorder``: the env an agent program is given, recording each step for its trajectory.

The agent resets and steps it as any Gymnasium env. The first ``reset`` starts the episode from
the group's seed (a seed the agent passes is replaced: the episodes of a group must start from
the same state); a second ``reset`` raises, since an agent call plays one episode. Each step
records when it began (the clock the gateway's calls are ordered by), the action, the reward,
the anchor (the state without history, GiGPO's grouping key) and the env's metrics.

Example:
    >>> import rollenv
    >>> env = StepRecorder(rollenv.make("FrozenLake-v0"), seed=3)
    >>> obs, info = env.reset(seed=99)  # the group's seed 3 is used
    >>> env.seed_used
    3
    >>> _ = env.step("<answer>Left</answer>")
    >>> len(env.steps), env.terminated or env.truncated
    (1, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from trainer.agents.session import now_ns

__all__ = ["RecordedStep", "StepRecorder"]


@dataclass
class RecordedStep:
    """One env step an agent took."""

    started_ns: int
    action: Any
    observation: Any
    reward: float
    anchor_before: str
    anchor: str
    metrics: dict[str, Any]


class StepRecorder(gym.Wrapper):
    """Records an agent's episode of ``env``, started from ``seed``.

    Attributes:
        steps: the steps so far.
        instruction: the env's rules at reset (``info["instruction"]``).
        first_observation: the observation at reset.
        terminated, truncated: how the env ended (both ``False`` while it runs).
    """

    def __init__(self, env: gym.Env, seed: int) -> None:
        super().__init__(env)
        self.seed_used = seed
        self.steps: list[RecordedStep] = []
        self.instruction = ""
        self.first_observation: Any = ""
        self.terminated = self.truncated = False
        self._anchor = ""
        self._reset = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if self._reset:
            raise RuntimeError(
                "this env plays one episode per agent call: reset() was called a second time"
            )
        self._reset = True
        obs, info = self.env.reset(seed=self.seed_used, options=options)
        self.instruction = str(info.get("instruction", ""))
        self.first_observation = obs
        self._anchor = str(info.get("anchor", ""))
        return obs, info

    def step(self, action: Any) -> Any:
        if not self._reset:
            raise RuntimeError("call reset() before step(): it starts the episode")
        started = now_ns()
        obs, reward, terminated, truncated, info = self.env.step(action)
        anchor = str(info.get("anchor", ""))
        self.steps.append(
            RecordedStep(
                started_ns=started,
                action=action,
                observation=obs,
                reward=float(reward),
                anchor_before=self._anchor,
                anchor=anchor,
                metrics=dict(info.get("metrics", {})),
            )
        )
        self._anchor = anchor
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        return obs, reward, terminated, truncated, info
