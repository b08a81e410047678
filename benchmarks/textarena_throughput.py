"""Steps/s of rollenv's TextArena adapter against TextArena called directly, same moves.

For each game, episodes of the random policy are recorded through the adapter first (untimed):
the agent's replies, the TextArena seed, and every move the adapter sent to TextArena (the
opponents' included, with their retries). Then, in one process, rounds alternate:

* ours: ``env.reset(seed)`` and ``env.step(reply)`` for each recorded reply (``rollenv.make``,
  replies in ``<answer>`` tags; the random opponent chooses its moves again, as in training);
* TextArena: ``ta.make(game)``, ``reset(num_players, seed)``, then ``get_observation()`` and
  ``step(move)`` for each recorded move (what a TextArena loop does, with its default wrappers).

Both replay the same game; a step is one move of the agent. The ratio is ours over TextArena's
steps/s (the goal: >= 0.9x, that is a step adding at most a ninth of TextArena's own: the
"µs/step allowed at 0.9x" column). In two-player games our side also chooses the opponent's moves
(reading the board for candidates, then the random opponent's pick), which the replay gets for
free; that time is measured apart ("opponent µs/step"), and the last ratio gives it to both
sides: ours against TextArena plus the same opponent. Prints a table; writes
``benchmarks/results/textarena_throughput.json``.

Run: ``python benchmarks/textarena_throughput.py --seconds 3``
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass

from report import RESULTS_DIR, add_common_arguments, parse_arguments, write_report
from table import print_table

import rollenv
from rollenv.policies import RandomPolicy, text_env_of

DEFAULT_GAMES = "Mastermind-v0,FifteenPuzzle-v0,Minesweeper-v0,TicTacToe-v0,ConnectFour-v0,Poker-v0"
RESULT = RESULTS_DIR / "textarena_throughput.json"
GOAL_RATIO = 0.9


@dataclass(frozen=True)
class Episode:
    seed: int
    textarena_seed: int
    replies: list[str]
    moves: list[tuple[int, str, bool]]


@dataclass
class Row:
    game: str
    players: int
    ours_steps: int
    ours_seconds: float
    direct_steps: int
    direct_seconds: float
    #: of ``ours_seconds``, the time spent choosing the opponents' moves
    opponent_seconds: float = 0.0

    @property
    def ours_per_second(self) -> float:
        return self.ours_steps / self.ours_seconds

    @property
    def direct_per_second(self) -> float:
        return self.direct_steps / self.direct_seconds

    @property
    def ratio(self) -> float:
        return self.ours_per_second / self.direct_per_second

    @property
    def adapter_us_per_step(self) -> float:
        """What the adapter adds to each step (its share of the resets included), in µs."""
        return 1e6 / self.ours_per_second - 1e6 / self.direct_per_second

    @property
    def allowed_us_per_step(self) -> float:
        """What a step may add to TextArena's and still run at ``GOAL_RATIO``, in µs."""
        return 1e6 / self.direct_per_second * (1 / GOAL_RATIO - 1)

    @property
    def opponent_us_per_step(self) -> float:
        return 1e6 * self.opponent_seconds / self.ours_steps

    @property
    def ratio_with_opponent(self) -> float:
        """Ours over TextArena with the same opponent's choices added to its time."""
        direct = self.direct_seconds / self.direct_steps + self.opponent_seconds / self.ours_steps
        return direct / (self.ours_seconds / self.ours_steps)


class Stopwatch:
    """Wraps functions so the seconds spent inside them add up in ``seconds``."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def timed(self, function):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return wrapper


def record(game: str, episodes: int) -> list[Episode]:
    """Random-policy episodes through the adapter: the replies and the moves TextArena got."""
    env = rollenv.make(f"textarena/{game}")
    inner = text_env_of(env)
    recorded = []
    for seed in range(episodes):
        policy = RandomPolicy(env, seed=seed)
        obs, info = env.reset(seed=seed)
        replies, done = [], False
        while not done:
            reply = policy.act(obs, info)
            replies.append(reply)
            obs, reward, terminated, truncated, info = env.step(reply)
            done = terminated or truncated
        recorded.append(Episode(seed, inner.textarena_seed, replies, list(inner.moves_sent)))
    return recorded


def play_ours(env, episode: Episode) -> int:
    env.reset(seed=episode.seed)
    for reply in episode.replies:
        env.step(reply)
    return len(episode.replies)


def play_direct(textarena, game: str, players: int, episode: Episode, agent_seat: int = 0) -> int:
    env = textarena.make(game)
    env.reset(num_players=players, seed=episode.textarena_seed)
    steps = 0
    for seat, move, retry in episode.moves:
        if retry:  # the adapter's opponent searching for an accepted move (see env.py)
            env.state.error_count = 0
        env.get_observation()
        env.step(move)
        steps += seat == agent_seat
    return steps


def measure(game: str, seconds: float, episodes: int) -> Row:
    import textarena

    recorded = record(game, episodes)
    env = rollenv.make(f"textarena/{game}")
    inner = text_env_of(env)
    players = inner.game.players
    # in play_ours only the opponents' turns ask for candidates (the replies are replayed)
    opponent = Stopwatch()
    inner._candidates = opponent.timed(inner._candidates)
    inner.opponent.moves = opponent.timed(inner.opponent.moves)
    row = Row(game, players, 0, 0.0, 0, 0.0)
    index = 0
    while row.ours_seconds < seconds or row.direct_seconds < seconds:
        episode = recorded[index % len(recorded)]
        index += 1
        start = time.perf_counter()
        row.ours_steps += play_ours(env, episode)
        row.ours_seconds += time.perf_counter() - start
        start = time.perf_counter()
        play_direct(textarena, game, players, episode)
        row.direct_seconds += time.perf_counter() - start
        # a step is an agent move on both sides (refused ones included)
        row.direct_steps += len(episode.replies)
    row.opponent_seconds = opponent.seconds
    return row


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="timed seconds per side, per game"
    )
    parser.add_argument("--games", default=DEFAULT_GAMES, help="comma-separated TextArena ids")
    parser.add_argument("--episodes", type=int, default=20, help="recorded episodes per game")
    add_common_arguments(parser, default_json=RESULT, quick="0.5 s a side, 5 recorded episodes")
    args = parse_arguments(parser, argv, quick_defaults={"seconds": 0.5, "episodes": 5})
    rows = [measure(g.strip(), args.seconds, args.episodes) for g in args.games.split(",")]
    print_table(
        [
            "game",
            "players",
            "ours steps/s",
            "TextArena steps/s",
            "ratio",
            "adapter µs/step",
            "µs/step allowed at 0.9x",
            "opponent µs/step",
            "ratio, same opponent",
        ],
        [
            [
                row.game,
                str(row.players),
                f"{row.ours_per_second:.0f}",
                f"{row.direct_per_second:.0f}",
                f"{row.ratio:.2f}x",
                f"{row.adapter_us_per_step:.1f}",
                f"{row.allowed_us_per_step:.1f}",
                f"{row.opponent_us_per_step:.1f}",
                f"{row.ratio_with_opponent:.2f}x",
            ]
            for row in rows
        ],
        "rollenv's adapter vs TextArena directly (same moves)",
    )
    result = {
        "benchmark": "textarena_throughput",
        "seconds_per_side": args.seconds,
        "goal_ratio": GOAL_RATIO,
        "games": [
            {
                **asdict(row),
                "ours_steps_per_second": round(row.ours_per_second, 1),
                "textarena_steps_per_second": round(row.direct_per_second, 1),
                "ratio": round(row.ratio, 3),
                "adapter_us_per_step": round(row.adapter_us_per_step, 2),
                "allowed_us_per_step": round(row.allowed_us_per_step, 2),
                "opponent_us_per_step": round(row.opponent_us_per_step, 2),
                "ratio_with_same_opponent": round(row.ratio_with_opponent, 3),
            }
            for row in rows
        ],
    }
    write_report(args.json, result, libraries=["textarena"])
    return result


if __name__ == "__main__":
    main()
