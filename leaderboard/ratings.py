"""Skill ratings of the players of two-player (and larger) games, from their matches.

Each match ranks its seats by their results (equal results tie), and OpenSkill's
Plackett-Luce model updates every player's ``mu`` (skill) and ``sigma`` (its uncertainty),
match by match, in the order they were played: a Bayesian rating of the TrueSkill kind, so a
player with few games keeps a wide interval. A match cut short (results ``None``) rates
nobody.

The leaderboard shows ``mu`` with the interval ``mu ± 2 sigma`` and ranks players by the
conservative estimate ``mu - 3 sigma`` (OpenSkill's ordinal): a player moves up once it is
surely good, not when it got lucky in its first games.

Example:
    >>> from leaderboard.records import MatchRecord
    >>> games = [MatchRecord("textarena/TicTacToe-v0", s, ("solver", "random"), (1.0, -1.0))
    ...          for s in range(20)]
    >>> table = rate(games)
    >>> table["solver"].mu > table["random"].mu, table["solver"].games
    (True, 20)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from leaderboard.records import MatchRecord

__all__ = ["PlayerRating", "rate"]


@dataclass(frozen=True)
class PlayerRating:
    """A player's rating in one game.

    Attributes:
        player: who (``"random"``, ``"solver"``, a checkpoint, ``"openai:<model>"``).
        mu: the estimated skill.
        sigma: the uncertainty of ``mu``.
        games: the rated matches it played.
    """

    player: str
    mu: float
    sigma: float
    games: int

    @property
    def interval(self) -> tuple[float, float]:
        """``mu ± 2 sigma``, where the skill is with about 95% belief."""
        return self.mu - 2 * self.sigma, self.mu + 2 * self.sigma

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``: what the board ranks by."""
        return self.mu - 3 * self.sigma


def rate(matches: Iterable[MatchRecord]) -> dict[str, PlayerRating]:
    """Rates every player of ``matches``, taken in order; players by name.

    A player who sits in two seats of one match (self-play) is left out of that match's rating.
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings: dict[str, object] = {}
    games: dict[str, int] = {}
    for match in matches:
        if any(result is None for result in match.results):
            continue
        if len(set(match.players)) < len(match.players):
            continue
        teams = [[ratings.setdefault(p, model.rating(name=p))] for p in match.players]
        # rank 0 is the best; equal results share a rank
        ordered = sorted({float(r) for r in match.results}, reverse=True)  # type: ignore[arg-type]
        ranks = [ordered.index(float(r)) for r in match.results]  # type: ignore[arg-type]
        rated = model.rate(teams, ranks=ranks)
        for player, [rating] in zip(match.players, rated, strict=True):
            ratings[player] = rating
            games[player] = games.get(player, 0) + 1
    return {
        player: PlayerRating(player, float(r.mu), float(r.sigma), games[player])  # type: ignore[attr-defined]
        for player, r in ratings.items()
    }
