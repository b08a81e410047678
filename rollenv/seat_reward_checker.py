"""``check_seat_rewards``: in a game of several seats, can a seat that ignores the game earn?

``check_reward`` asks it of a single-agent env; here each seat in turn plays a *probe*, a reply
that ignores the game, against random players in the other seats, over several games:

* ``stalls``: a reply with no answer, every turn;
* ``empty answer``: an answer with nothing in it;
* ``illegal move``: an answer that is no move of any game;
* ``resigns``: the answer ``I resign``;
* ``instruction copied``: the seat's own instruction as its answer.

A probe passes when its seat's mean return is at most 0 and it wins no game: a seat that
resigns, stalls or plays illegal moves earns nothing.

In some games a seat can win on the other seats' play alone: its team wins, or its rivals
lose on their own (``metadata["passive_seat_can_win"]``). There a win proves nothing, so the
probe is compared with a random player in the same seat, against the same random players on
the same seeds: it passes when its mean return is at most 0, or at most the random player's.
Ignoring the game must not pay, nor pay more than playing it at random. Its wins and the
random player's are shown, not judged: they are the team's, or the rivals' mistakes.

Example:
    >>> import rollenv
    >>> report = check_seat_rewards(rollenv.make_multi("textarena/TicTacToe-v0"), games=3)
    >>> report.passed, sorted({p.agent for p in report.probes})
    (True, ['player_0', 'player_1'])
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rollenv.seat_policies import RandomSeatPolicy, play_game

#: each probe: its name and the reply it sends, given the env and its seat
PROBES: dict[str, Callable[[Any, str], str]] = {
    "stalls": lambda env, agent: "Let me think about the best move here.",
    "empty answer": lambda env, agent: env.answer_format.wrap(""),
    "illegal move": lambda env, agent: env.answer_format.wrap("zz-no-move-of-this-game"),
    "resigns": lambda env, agent: env.answer_format.wrap("I resign"),
    "instruction copied": lambda env, agent: env.answer_format.wrap(
        env.observe(agent)["instruction"]
    ),
}


class _Probe:
    """A seat policy that sends one probe's reply every turn."""

    def __init__(self, reply: Callable[[Any, str], str]) -> None:
        self._reply = reply

    def reply(self, env: Any, agent: str) -> str:
        return self._reply(env.unwrapped, agent)


@dataclass(frozen=True)
class SeatProbeResult:
    """What one probe earned in one seat over the games.

    Attributes:
        probe: the probe's name.
        agent: the seat it played.
        returns: its seat's summed reward in each game.
        wins: the games its seat won (the best result, above another seat's).
        baseline: a random player's returns and wins in the same seat, in a game where a
            passive seat can win (``None`` elsewhere).
    """

    probe: str
    agent: str
    returns: tuple[float, ...]
    wins: int
    baseline: tuple[tuple[float, ...], int] | None = None

    @property
    def mean_return(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def passed(self) -> bool:
        if self.baseline is None:
            return self.mean_return <= 0 and self.wins == 0
        returns, _ = self.baseline
        return self.mean_return <= max(0.0, statistics.fmean(returns))


@dataclass(frozen=True)
class SeatRewardReport:
    """Every probe in every seat; ``passed`` when none earned."""

    env_name: str
    probes: tuple[SeatProbeResult, ...] = field(default_factory=tuple)

    @property
    def earning(self) -> list[SeatProbeResult]:
        return [p for p in self.probes if not p.passed]

    @property
    def passed(self) -> bool:
        return not self.earning

    def table(self) -> str:
        lines = [
            f"{'probe':<20} {'seat':<10} {'mean return':>12} {'wins':>5} "
            f"{'random player':>14}  verdict"
        ]
        for p in self.probes:
            verdict = "ok" if p.passed else "EARNS"
            random_player = (
                ""
                if p.baseline is None
                else (f"{statistics.fmean(p.baseline[0]):.3f}, {p.baseline[1]}")
            )
            lines.append(
                f"{p.probe:<20} {p.agent:<10} {p.mean_return:>12.3f} {p.wins:>5} "
                f"{random_player:>14}  {verdict}"
            )
        return "\n".join(lines)


def check_seat_rewards(env: Any, games: int = 8, seed: int = 0) -> SeatRewardReport:
    """Plays every probe in every seat of ``env`` (a ``rollenv.make_multi`` game) against
    random players, ``games`` games each (seeds ``seed .. seed + games - 1``).

    Returns:
        The report; ``report.passed`` is False when a probe's seat earned, and
        ``report.table()`` shows each probe's return and wins.
    """
    game = env.unwrapped

    def play(agent: str, player: Any) -> tuple[tuple[float, ...], int]:
        policies: dict[str, Any] = {
            other: RandomSeatPolicy(seed=seed + index)
            for index, other in enumerate(game.possible_agents)
        }
        policies[agent] = player
        returns, wins = [], 0
        for game_seed in range(seed, seed + games):
            record = play_game(env, policies, seed=game_seed)
            returns.append(record.results[agent])
            wins += game.won(agent)
        return tuple(returns), wins

    baselines = {}
    if game.metadata.get("passive_seat_can_win"):
        for index, agent in enumerate(game.possible_agents):
            baselines[agent] = play(agent, RandomSeatPolicy(seed=seed + index))
    results = []
    for name, reply in PROBES.items():
        for agent in game.possible_agents:
            returns, wins = play(agent, _Probe(reply))
            results.append(SeatProbeResult(name, agent, returns, wins, baselines.get(agent)))
    return SeatRewardReport(game.metadata.get("name", type(game).__name__), tuple(results))
