"""What the leaderboard stores: plain data, written by whoever plays the episodes (``trainer``),
read by the store and the page.

* ``EpisodeRecord``: one episode's transcript (every turn's reply, the observation it led to,
  its reward and metrics) and its outcome.
* ``EvalIdentity``: what makes two evaluations the same one (model, weights, suite version,
  sampling); its ``key`` is the store's unique key, so an identical eval resumes or is reported
  as done instead of being played twice.
* ``Provenance``: where a result came from (versions, commit, hardware, command).
* ``TrainingPoint``: one evaluation point of a ``roll-agent train`` run (the learning curve).
* ``MatchRecord``: one game of several seats between rated players, every seat's moves in
  order (``leaderboard.ratings`` rates the players from them).

Example:
    >>> from leaderboard.records import EpisodeRecord, TurnRecord
    >>> turn = TurnRecord(reply="<answer>Up</answer>", observation="#P#", reward=1.0,
    ...                   metrics={"success": True}, prompt_tokens=30, reply_tokens=5)
    >>> episode = EpisodeRecord(env_id="SimpleSokoban-v0", seed=3, instruction="Push the box.",
    ...                         first_observation="#P_#", turns=(turn,), success=True,
    ...                         total_reward=1.0, finish_reason="terminated", wall_s=0.1)
    >>> EpisodeRecord.from_json(episode.to_json()) == episode
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Board",
    "BoardRow",
    "EnvResult",
    "EpisodeRecord",
    "EpisodeSummary",
    "EvalIdentity",
    "EvalSummary",
    "MatchMove",
    "MatchRecord",
    "Provenance",
    "TrainingPoint",
    "TurnRecord",
]


@dataclass(frozen=True)
class TurnRecord:
    """One reply and the env step it drove.

    Attributes:
        reply: the agent's reply, as the env read it.
        observation: what the env showed after the step.
        reward: the step's reward.
        metrics: the step's ``info["metrics"]`` (``success``, ``action_is_valid``, ...).
        prompt_tokens: tokens of the prompt that produced the reply (0 for a baseline policy).
        reply_tokens: tokens of the reply (0 for a baseline policy).
    """

    reply: str
    observation: str
    reward: float
    metrics: Mapping[str, Any] = field(default_factory=dict)
    prompt_tokens: int = 0
    reply_tokens: int = 0


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode: its transcript and its outcome.

    Attributes:
        env_id: the env it ran in (with its version, ``SimpleSokoban-v0``).
        seed: the reset seed (a held-out seed of the suite).
        instruction: the env's rules (``info["instruction"]`` at reset).
        first_observation: the observation at reset.
        turns: what happened, turn by turn.
        success: whether the task was solved (the last turn's ``metrics["success"]``).
        total_reward: the sum of the turns' rewards.
        finish_reason: ``terminated``, ``truncated``, ``max_turns`` or ``context``.
        wall_s: seconds the episode took.
    """

    env_id: str
    seed: int
    instruction: str
    first_observation: str
    turns: tuple[TurnRecord, ...]
    success: bool
    total_reward: float
    finish_reason: str
    wall_s: float

    @property
    def prompt_tokens(self) -> int:
        return sum(turn.prompt_tokens for turn in self.turns)

    @property
    def reply_tokens(self) -> int:
        return sum(turn.reply_tokens for turn in self.turns)

    def to_json(self) -> str:
        """The record as one JSON string (what the store keeps)."""
        return json.dumps(asdict(self), sort_keys=True, default=_jsonable)

    @classmethod
    def from_json(cls, text: str) -> EpisodeRecord:
        data = json.loads(text)
        data["turns"] = tuple(TurnRecord(**turn) for turn in data["turns"])
        return cls(**data)


@dataclass(frozen=True)
class EvalIdentity:
    """What makes an evaluation the same one: the store keeps one result per ``key``.

    Attributes:
        model: the model's display name (``smollm2-135m``, ``random``, a folder's name, ...).
        weights: a hash of the model's weights, or for a served model its endpoint and model id,
            or ``"baseline"`` for ``random`` / ``oracle``.
        suite: the suite's name (``core``, ``smoke``).
        suite_version: the suite's version; results of different versions never share a column.
        sampling: the sampling parameters (``temperature``, ``top_p``, ``max_new_tokens``,
            ``seed``); greedy is ``temperature`` 0.
    """

    model: str
    weights: str
    suite: str
    suite_version: int
    sampling: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A stable hash of every field."""
        text = json.dumps(asdict(self), sort_keys=True, default=_jsonable)
        return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Provenance:
    """Where a result came from, stored beside it.

    Attributes:
        model_source: what ``--model`` named (a preset, a folder, an endpoint, a baseline).
        suite_fingerprint: a hash of the suite's file, so a suite edited without a new version
            is caught.
        env_versions: each env id of the suite and the version of the package that registered it.
        rollenv_version: the installed rollenv's version.
        git_commit: the commit of the checkout, or ``""`` outside one.
        hardware: e.g. ``"2 CPU cores, no GPU"``.
        command: the command line that ran the eval.
    """

    model_source: str
    suite_fingerprint: str
    env_versions: Mapping[str, str]
    rollenv_version: str
    git_commit: str
    hardware: str
    command: str = ""


@dataclass(frozen=True)
class TrainingPoint:
    """One evaluation of a training run, for its learning curve.

    Attributes:
        run_id: the run (its output folder's name, ``trainer.training.training_points.run_id_of``).
        model: the base model the run trains.
        env_id: the env it trains in.
        step: the training step.
        metrics: the evaluation's numbers (``success``, ``return``, ...).
        recorded_at: seconds since the epoch.
    """

    run_id: str
    model: str
    env_id: str
    step: int
    metrics: Mapping[str, float]
    recorded_at: float


@dataclass(frozen=True)
class MatchMove:
    """One move of a match.

    Attributes:
        seat: the seat that moved (0, 1, ...).
        told: what the seat had been told since its previous move.
        reply: its reply.
    """

    seat: int
    told: str
    reply: str


@dataclass(frozen=True)
class MatchRecord:
    """One game between rated players.

    Attributes:
        game: the multi-agent id (``"textarena/TicTacToe-v0"``).
        seed: the game's reset seed.
        players: who sat in each seat, by seat (``"random"``, ``"solver"``, a checkpoint,
            ``"openai:<model>"``).
        results: each seat's result, by seat; ``None`` for every seat of a game cut short.
        moves: every move, in order.
        played_at: seconds since the epoch.
    """

    game: str
    seed: int
    players: tuple[str, ...]
    results: tuple[float | None, ...]
    moves: tuple[MatchMove, ...] = ()
    played_at: float = 0.0

    def to_json(self) -> str:
        """The record as one JSON string (what the store keeps)."""
        return json.dumps(asdict(self), sort_keys=True, default=_jsonable)

    @classmethod
    def from_json(cls, text: str) -> MatchRecord:
        data = json.loads(text)
        return cls(
            game=data["game"],
            seed=data["seed"],
            players=tuple(data["players"]),
            results=tuple(data["results"]),
            moves=tuple(MatchMove(**move) for move in data["moves"]),
            played_at=data["played_at"],
        )


# ------------------------------------------------------------------ what the store reads back
@dataclass(frozen=True)
class EvalSummary:
    """One evaluation in the store.

    Attributes:
        eval_id: the store's id of it.
        identity: what was evaluated.
        provenance: where it came from.
        env_ids: the suite's envs, in the suite's order.
        started_at: seconds since the epoch.
        finished_at: seconds since the epoch, ``None`` while it is incomplete.
        episodes: episodes stored so far.
    """

    eval_id: int
    identity: EvalIdentity
    provenance: Provenance
    env_ids: tuple[str, ...]
    started_at: float
    finished_at: float | None
    episodes: int

    @property
    def complete(self) -> bool:
        return self.finished_at is not None


@dataclass(frozen=True)
class EnvResult:
    """One model's result in one env of a suite.

    Attributes:
        env_id: the env.
        episodes: episodes played.
        successes: episodes solved.
        success_rate: ``successes / episodes``.
        low: the Wilson 95% interval's lower end.
        high: its upper end.
        mean_return: the mean of the episodes' total rewards.
        mean_turns: the mean turns an episode.
        prompt_tokens: prompt tokens over every turn of every episode.
        reply_tokens: reply tokens likewise.
        wall_s: the episodes' seconds, summed.
    """

    env_id: str
    episodes: int
    successes: int
    success_rate: float
    low: float
    high: float
    mean_return: float
    mean_turns: float
    prompt_tokens: int
    reply_tokens: int
    wall_s: float


@dataclass(frozen=True)
class BoardRow:
    """One evaluation's row of the ranking.

    Attributes:
        evaluation: the evaluation.
        results: its result per env id.
        overall: the mean success rate over every env of the suite; ``None`` when some env has
            no episodes yet (such rows rank last).
    """

    evaluation: EvalSummary
    results: Mapping[str, EnvResult]
    overall: float | None


@dataclass(frozen=True)
class Board:
    """The ranking of one suite version.

    Attributes:
        suite: the suite's name.
        suite_version: its version.
        env_ids: the columns, in the suite's order.
        rows: best ``overall`` first.
    """

    suite: str
    suite_version: int
    env_ids: tuple[str, ...]
    rows: tuple[BoardRow, ...]


@dataclass(frozen=True)
class EpisodeSummary:
    """An episode's line in a list, without its transcript."""

    episode_id: int
    eval_id: int
    env_id: str
    seed: int
    success: bool
    total_reward: float
    turns: int


def _jsonable(value: Any) -> Any:
    """numpy scalars and other odd values in metrics become plain JSON."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
