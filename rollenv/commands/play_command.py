"""``roll-agent play``: an env in the terminal. A person plays (arrow keys move where the env's
actions are directions), or watches a random or oracle policy play.

Example:
    $ roll-agent play Sokoban-v0 --seed 3
    $ roll-agent play Sokoban-v0 --policy oracle --episodes 3
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollenv.commands.arguments import PROG, UsageError, env_spec, non_negative_int, positive_int

if TYPE_CHECKING:
    import gymnasium as gym

    from rollenv.policies import Policy

QUIT_WORDS = frozenset({"q", "quit", "exit"})

#: who ``roll-agent play`` lets play
PLAY_POLICIES = ("human", "random", "oracle")

#: seconds between a policy's moves in ``roll-agent play`` when stdout is a terminal
DEFAULT_PLAY_DELAY = 0.5

#: what a terminal sends for each arrow key (normal and application cursor mode), and the
#: direction it stands for
ARROW_KEYS = {
    "\x1b[A": "up",
    "\x1b[B": "down",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1bOA": "up",
    "\x1bOB": "down",
    "\x1bOC": "right",
    "\x1bOD": "left",
}

__all__ = ["add_play_command", "run_play"]


def add_play_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``play`` to ``roll-agent``'s subcommands."""
    parser = commands.add_parser(
        "play",
        help="Play an environment yourself, or watch a random or oracle policy play it.",
        description="Play an environment in the terminal. Type an action word (e.g. 'up') or a "
        "full reply as an agent would write it (e.g. '<answer>Up</answer>'), then Enter; where "
        "the environment has Up/Down/Left/Right moves, the arrow keys (then Enter) play them, "
        "one move per arrow. 'q' or end of input quits. Reads its moves from stdin, so it can "
        "be scripted. With --policy random or oracle, watch that policy play instead.",
        epilog=f"Run '{PROG} envs' for the environment ids.",
    )
    parser.add_argument("env", metavar="ENV", help="environment id (e.g. Sokoban-v0) or family")
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        metavar="N",
        help="seed of the episode (same seed, same puzzle); random if not given",
    )
    parser.add_argument(
        "--max-turns",
        type=positive_int,
        metavar="N",
        help="end the episode after N turns (default: the environment's own limit)",
    )
    parser.add_argument(
        "--policy",
        choices=PLAY_POLICIES,
        default="human",
        help="who plays: you (human, the default), uniformly random valid actions (random), "
        "or the environment's solver (oracle)",
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        default=1,
        metavar="N",
        help="play N episodes, on seeds SEED, SEED+1, ... (default 1)",
    )
    parser.add_argument(
        "--delay",
        type=_seconds,
        metavar="SECONDS",
        help="pause between a policy's moves (default: 0.5 on a terminal, 0 otherwise)",
    )
    parser.set_defaults(handler=run_play)


def _seconds(text: str) -> float:
    """argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"expected 0 or more seconds, got {text!r}")
    return value


# ---------------------------------------------------------------------------------- play
@dataclass
class _PlayTally:
    """What a person's episode has given so far."""

    turns: int = 0
    total_reward: float = 0.0
    invalid_actions: int = 0

    def summary(self) -> str:
        return (
            f"Total reward {self.total_reward:.2f} in {self.turns} "
            f"{'turn' if self.turns == 1 else 'turns'}; "
            f"invalid actions: {self.invalid_actions} of {self.turns}."
        )


def run_play(args: argparse.Namespace) -> int:
    """``roll-agent play``: a person plays, reading moves from stdin, or a policy plays while
    the person watches; ``--episodes`` episodes on consecutive seeds."""
    import rollenv
    from rollenv.policies import text_env_of

    spec = env_spec(args.env)
    make_options = {} if args.max_turns is None else {"max_episode_steps": args.max_turns}
    env = rollenv.make(spec.id, **make_options)
    text_env = text_env_of(env)
    policy_for = _play_policy(env, spec.id, args.policy)
    delay = args.delay
    if delay is None:
        delay = DEFAULT_PLAY_DELAY if sys.stdout.isatty() else 0.0
    first_seed = random.randrange(1 << 31) if args.seed is None else args.seed

    solved = 0
    for episode in range(args.episodes):
        seed = first_seed + episode
        if episode:
            print()
        who = "" if policy_for is None else f", {args.policy} policy"
        print(f"{spec.id}, seed {seed}{who} (replay this episode with --seed {seed})\n")
        observation, info = env.reset(seed=seed)
        print(info["instruction"])
        if policy_for is None:
            outcome = _play_human(env, text_env, observation)
        else:
            outcome = _play_policy_episode(
                env, text_env, policy_for(seed), args.policy, observation, info, delay
            )
        if outcome is None:
            return 0
        solved += outcome
    if args.episodes > 1:
        print(f"\nSolved {solved} of {args.episodes} episodes.")
    return 0


def _play_policy(env: gym.Env, env_id: str, name: str) -> Callable[[int], Policy] | None:
    """Builds, from an episode's seed, the policy ``--policy`` names (the random policy draws
    from that seed too, so ``--seed`` replays its moves); ``None`` for a person."""
    from rollenv.policies import RandomPolicy, oracle_for

    if name == "random":
        return lambda seed: RandomPolicy(env, seed=seed)
    if name == "oracle":
        try:
            oracle_for(env)
        except NotImplementedError:
            raise UsageError(
                f"{env_id} has no oracle policy; use --policy random, or play it yourself"
            ) from None
        return lambda seed: oracle_for(env)
    return None


def _play_human(env: gym.Env, text_env: Any, observation: str) -> bool | None:
    """One episode played by a person; whether it was solved, or ``None`` if they quit."""
    actions = ", ".join(text_env.action_words)
    arrows = _arrow_actions(text_env.action_words)
    keys = " or the arrow keys" if arrows and sys.stdin.isatty() else ""
    print(f"\nType an action ({actions}){keys} or a full reply; q quits.\n")
    print(observation)

    tally = _PlayTally()
    pending: list[str] = []
    while True:
        typed = pending.pop(0) if pending else _read_move()
        if typed is None or typed.lower() in QUIT_WORDS:
            print(f"\nQuit. {tally.summary()}")
            return None
        if "\x1b" in typed:
            moves = _arrow_moves(typed, arrows)
            if moves is None:
                print(f"(arrow keys are not moves here; type an action: {actions})")
                continue
            typed, pending = moves[0], moves[1:]
            print(f"move: {typed}")
        if not typed:
            continue
        reply = typed if "<" in typed else text_env.answer_format.wrap(typed)
        observation, reward, terminated, truncated, info = env.step(reply)
        metrics = info["metrics"]
        tally.turns += 1
        tally.total_reward += reward
        tally.invalid_actions += not metrics["action_is_valid"]
        print(_step_line(reward, metrics, reply, actions))
        print(observation)
        if terminated or truncated:
            print(f"\n{_episode_end_line(metrics['success'], terminated)} {tally.summary()}")
            return bool(metrics["success"])


def _play_policy_episode(
    env: gym.Env,
    text_env: Any,
    policy: Policy,
    name: str,
    observation: str,
    info: dict[str, Any],
    delay: float,
) -> bool:
    """One episode played by ``policy``, each reply and observation printed; whether solved."""
    actions = ", ".join(text_env.action_words)
    print(f"\n{observation}")
    tally = _PlayTally()
    while True:
        if delay:
            time.sleep(delay)
        reply = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(reply)
        metrics = info["metrics"]
        tally.turns += 1
        tally.total_reward += reward
        tally.invalid_actions += not metrics["action_is_valid"]
        print(f"\n{name}: {reply}")
        print(_step_line(reward, metrics, reply, actions))
        print(observation, flush=True)
        if terminated or truncated:
            print(f"\n{_episode_end_line(metrics['success'], terminated)} {tally.summary()}")
            return bool(metrics["success"])


def _arrow_actions(action_words: Sequence[str]) -> dict[str, str]:
    """The env's own spelling of each direction an arrow key stands for, where it has one."""
    by_lower = {word.lower(): word for word in action_words}
    return {key: by_lower[way] for key, way in ARROW_KEYS.items() if way in by_lower}


_ARROW_PATTERN = re.compile("|".join(re.escape(key) for key in ARROW_KEYS))


def _arrow_moves(typed: str, arrows: dict[str, str]) -> list[str] | None:
    """The moves a line of arrow keys stands for (one per key), or ``None`` if the line holds
    anything else or the env has no such move.

    Example:
        >>> _arrow_moves("\\x1b[B\\x1b[C", {"\\x1b[B": "Down", "\\x1b[C": "Right"})
        ['Down', 'Right']
    """
    keys = _ARROW_PATTERN.findall(typed)
    if not keys or _ARROW_PATTERN.sub("", typed).strip() or any(k not in arrows for k in keys):
        return None
    return [arrows[key] for key in keys]


def _read_move() -> str | None:
    """The next line the person typed, stripped, or ``None`` at end of input.

    On a terminal an arrow key arrives as its escape sequence (``input`` is used without
    ``readline``, which would take the arrows for line editing); :func:`_arrow_moves` reads it.
    """
    prompt = "your move> " if sys.stdin.isatty() else ""
    try:
        return input(prompt).strip()
    except EOFError:
        return None


def _step_line(reward: float, metrics: dict[str, Any], reply: str, actions: str) -> str:
    valid = metrics["action_is_valid"]
    line = (
        f"reward {reward:+.2f} | valid: {_yes_no(valid)} | "
        f"effective: {_yes_no(metrics['action_is_effective'])} | "
        f"success: {_yes_no(metrics['success'])}"
    )
    if not valid:
        line += f"  (invalid action: could not read an action from {reply!r}; actions: {actions})"
    return line


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def _episode_end_line(success: bool, terminated: bool) -> str:
    if success:
        return "Solved!"
    if terminated:
        return "Episode over: failed."
    return "Episode over: out of turns, not solved."
