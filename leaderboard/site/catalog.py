"""What one rendering of the site reads from the store, read once: every suite's board, the
training runs and the rated games, with the ways the pages look them up (by model, by env, by
run).

The served app builds a fresh ``Catalog`` per request, so every page shows the store as it is
now; the export builds one for the whole site.

Example:
    >>> from leaderboard.records import Board
    >>> catalog = Catalog(boards=(Board("smoke", 0, ("FrozenLake-v0",), ()),), runs={})
    >>> catalog.env_ids(), catalog.models()
    (['FrozenLake-v0'], {})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from leaderboard.ratings import PlayerRating
from leaderboard.records import (
    Board,
    BoardRow,
    EpisodeRecord,
    EpisodeSummary,
    MatchRecord,
    TrainingPoint,
)
from leaderboard.site.formatting import checkpoint_of

__all__ = ["Catalog", "ResultReader"]


class ResultReader(Protocol):
    """The part of ``leaderboard.store.ResultStore`` the site reads."""

    def suites(self) -> list[tuple[str, int]]: ...

    def board(self, suite: str, suite_version: int | None = None) -> Board: ...

    def episodes(self, eval_id: int, env_id: str | None = None) -> list[EpisodeSummary]: ...

    def episode(self, episode_id: int) -> EpisodeRecord: ...

    def training_runs(self) -> Mapping[str, Sequence[TrainingPoint]]: ...

    def rated_games(self) -> list[str]: ...

    def ratings(self, game: str) -> list[PlayerRating]: ...

    def matches(self, game: str, player: str | None = None) -> list[tuple[int, MatchRecord]]: ...

    def match(self, match_id: int) -> MatchRecord: ...


@dataclass(frozen=True)
class Catalog:
    """Every board (suites by name, newest version first), every training run and every rated
    game.

    Attributes:
        boards: one per (suite, version).
        runs: run id -> its evaluation points, by step.
        ratings: game -> its players' ratings, best first.
    """

    boards: tuple[Board, ...]
    runs: Mapping[str, tuple[TrainingPoint, ...]]
    ratings: Mapping[str, tuple[PlayerRating, ...]] = field(default_factory=dict)

    @classmethod
    def read(cls, store: ResultReader) -> Catalog:
        """Reads the boards and runs of ``store``."""
        keys = sorted(store.suites(), key=lambda key: (key[0], -key[1]))
        boards = tuple(store.board(suite, version) for suite, version in keys)
        runs = {
            run_id: tuple(sorted(points, key=lambda point: (point.step, point.env_id)))
            for run_id, points in sorted(store.training_runs().items())
        }
        ratings = {game: tuple(store.ratings(game)) for game in store.rated_games()}
        return cls(boards, runs, ratings)

    def models(self) -> dict[str, list[tuple[Board, BoardRow]]]:
        """Model name -> its rows, board by board (a model may have several evaluations)."""
        found: dict[str, list[tuple[Board, BoardRow]]] = {}
        for board in self.boards:
            for row in board.rows:
                found.setdefault(row.evaluation.identity.model, []).append((board, row))
        return dict(sorted(found.items(), key=lambda item: item[0].lower()))

    def env_ids(self) -> list[str]:
        """Every env of every board, each once, in the order the boards name them."""
        return list(dict.fromkeys(env_id for board in self.boards for env_id in board.env_ids))

    def boards_with(self, env_id: str) -> list[Board]:
        """The boards that have a column for ``env_id``."""
        return [board for board in self.boards if env_id in board.env_ids]

    def run_of(self, model: str) -> str | None:
        """The training run a model is a checkpoint of, when that run is in the store."""
        checkpoint = checkpoint_of(model)
        return checkpoint[0] if checkpoint and checkpoint[0] in self.runs else None

    def checkpoints_of(self, run_id: str) -> list[str]:
        """The models on the boards that are checkpoints of ``run_id``, by step."""
        found = {
            model: checkpoint[1]
            for model in self.models()
            if (checkpoint := checkpoint_of(model)) and checkpoint[0] == run_id
        }
        return sorted(found, key=found.__getitem__)
