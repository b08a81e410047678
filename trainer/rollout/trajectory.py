"""``Trajectory``: one episode as plain data, written by the env manager, read by algorithms.

A trajectory holds one or more ``Sample``s, the token sequences the trainer trains on:

* full-context mode: one sample, the whole episode as a single chat, every reply marked in the
  loss mask;
* window mode: one sample per turn, the prompt holding the last N turns, only that turn's
  reply in the loss mask.

``Sample.turn_of_token[i]`` is the turn whose reply token ``i`` is, or -1 for prompt and
observation tokens; step-level advantages are spread over tokens with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Sample:
    """A token sequence to train on.

    Attributes:
        token_ids: prompt and reply tokens, as the model saw and sampled them.
        loss_mask: 1 on tokens the policy sampled (trained on), 0 elsewhere.
        logprobs: the generator's log-prob of each sampled token (0.0 where ``loss_mask`` is 0).
        turn_of_token: turn index of each sampled token, -1 elsewhere.
        choices: the tokens each sampled token was sampled among, where a grammar left it
            few (``SamplingParams.record_choices``): it is trained on, and its ``logprobs``
            entry taken, under the softmax over those alone; ``None`` entries (and ``None``
            for the whole sample) are scored over the whole vocabulary.
        weight_versions: the version of the weights that sampled each token (-1 on prompt
            and observation tokens), where the generator numbers its weights; an episode
            played on across a weight update holds tokens of several versions. ``None``: not
            recorded.
    """

    token_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    turn_of_token: list[int]
    choices: list[tuple[int, ...] | None] | None = None
    weight_versions: list[int] | None = None

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if not len(self.loss_mask) == len(self.logprobs) == len(self.turn_of_token) == n:
            raise ValueError("Sample fields must all have one entry per token")
        if self.choices is not None and len(self.choices) != n:
            raise ValueError("Sample.choices must have one entry per token")
        if self.weight_versions is not None and len(self.weight_versions) != n:
            raise ValueError("Sample.weight_versions must have one entry per token")


@dataclass
class Turn:
    """One model call and the env step it drove."""

    reply: str
    reward: float
    anchor: str
    metrics: dict[str, Any]
    prompt_tokens: int
    response_tokens: int
    observation: str = ""  # what the env showed after the step (the leaderboard's transcript)


@dataclass
class Trajectory:
    """One episode.

    Attributes:
        env_id: the env it ran in.
        seed: the reset seed (every member of a group shares it).
        group_id: trajectories with the same ``group_id`` started from the same state.
        turns: what happened, turn by turn.
        samples: the token sequences to train on (see the module docstring).
        finish_reason: ``terminated``, ``truncated`` (the env's limits), ``max_turns`` (the
            trainer's), ``context`` (the prompt outgrew the context budget) or ``aborted``.
        anchors_start: the anchor (state without history) before each turn; GiGPO groups on it.
        generator_replica: which generator replica served its turns (``None`` in-process).
        instruction: the env's rules at reset (``info["instruction"]``).
        first_observation: the observation at reset (with each turn's ``observation``, the
            episode's transcript).
        reward_request: what the env asked reward workers to score (``info["reward_request"]``
            of its last step, plain data), or ``None`` when it scored every step itself.
        unscored: why the reward workers could not score it (a judge that failed, a verifier
            past its deadline), or ``None``. An unscored episode is left out of the update.
    """

    env_id: str
    seed: int
    group_id: int
    turns: list[Turn] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    finish_reason: str = ""
    anchors_start: list[str] = field(default_factory=list)
    generator_replica: int | None = None
    instruction: str = ""
    first_observation: str = ""
    reward_request: dict[str, Any] | None = None
    unscored: str | None = None

    @property
    def episode_return(self) -> float:
        return sum(turn.reward for turn in self.turns)

    @property
    def step_rewards(self) -> list[float]:
        return [turn.reward for turn in self.turns]

    @property
    def success(self) -> bool:
        return bool(self.turns) and bool(self.turns[-1].metrics.get("success", False))
