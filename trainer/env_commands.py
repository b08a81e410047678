"""The env commands of ``roll-agent``: ``envs`` lists the registry, ``play`` plays an env in the
terminal (a person plays, or watches a random or oracle policy play), ``check`` runs Gymnasium's
checker, random and oracle episodes, and ``check_reward``.

None of them imports torch or Ray.

Example:
    $ roll-agent envs --family sokoban
    $ roll-agent play Sokoban-v0 --seed 3
    $ roll-agent play Sokoban-v0 --policy oracle --episodes 3
    $ roll-agent check MathVerify-v0 CodeSandbox-v0 --reward --episodes 20
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainer.cli_arguments import PROG, UsageError, non_negative_int, positive_int
from trainer.terminal import episode_progress, print_table

if TYPE_CHECKING:
    import gymnasium as gym

    from rollenv import EnvSpec
    from rollenv.policies import EpisodeResult, Policy

__all__ = ["add_env_commands", "run_check", "run_envs", "run_play"]

ORACLE_SUCCESS_THRESHOLD = 0.9
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
#: follows an id in ``roll-agent envs`` that its family knows but cannot run here
UNAVAILABLE_MARK = "(unavailable)"


def add_env_commands(commands: argparse._SubParsersAction) -> None:
    """Adds ``envs``, ``play`` and ``check`` to ``roll-agent``'s subcommands."""
    _add_envs_command(commands)
    _add_play_command(commands)
    _add_check_command(commands)


def _add_envs_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "envs",
        help="List the registered environments.",
        description="List the registered environments: id, family, turn limit and description. "
        "Third-party packages add environments through the 'rollenv.envs' entry-point group.",
    )
    parser.add_argument(
        "--family", metavar="NAME", help="only the environments of this family (e.g. sokoban)"
    )
    parser.add_argument(
        "--unavailable",
        action="store_true",
        help="list the ids that families know but cannot run here, and why (a missing extra, "
        "data that needs a download)",
    )
    parser.set_defaults(handler=run_envs)


def _add_play_command(commands: argparse._SubParsersAction) -> None:
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


def _add_check_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "check",
        help="Check an environment: Gymnasium's env checker, random and oracle episodes.",
        description="Check an environment: run gymnasium's check_env on it, then episodes of a "
        "random policy and of the family's oracle, and report success rate, valid-action rate, "
        "mean return and mean turns. Exits 0 if check_env passes and the oracle (where the "
        f"family has one) solves at least {ORACLE_SUCCESS_THRESHOLD:.0%} of its episodes, "
        "else 1. With --reward, the episodes are the oracle's and those of replies that ignore "
        "the task (rollenv.check_reward), and the check also fails when such a reply earns "
        "more than the env's tolerance.",
        epilog=f"Run '{PROG} envs' for the environment ids.",
    )
    parser.add_argument(
        "env", metavar="ENV", nargs="*", help="environment ids (e.g. Sokoban-v0) or families"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every registered id (with --reward: every id whose family has an oracle)",
    )
    parser.add_argument(
        "--reward",
        action="store_true",
        help="check that replies ignoring the task (copied question, empty answer, code stubs, "
        "...) earn nothing, against the oracle",
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        default=50,
        metavar="N",
        help="episodes per policy (default: 50)",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=0,
        metavar="S",
        help="episode i is reset with seed S+i (default: 0)",
    )
    parser.set_defaults(handler=run_check)


def _env_spec(env_id: str) -> EnvSpec:
    """The spec of ``env_id``, or a ``UsageError`` naming the closest registered ids."""
    import rollenv

    try:
        return rollenv.spec(env_id)
    except (rollenv.UnknownEnvError, rollenv.EnvUnavailableError) as error:
        raise UsageError(str(error)) from None


# ---------------------------------------------------------------------------------- envs
def run_envs(args: argparse.Namespace) -> int:
    """``roll-agent envs``: prints the registry grouped by family, then a count per family.

    An id that its family knows but cannot run here (a missing extra, data that needs a
    download) is listed too, marked ``(unavailable)``, with the reason and, where there is one,
    the ``pip install`` that fixes it. With ``--unavailable``, only those ids.
    """
    import rollenv

    specs = sorted(rollenv.registry.values(), key=lambda spec: (spec.family or "", spec.id))
    unavailable = sorted(
        rollenv.registry.unavailable.values(), key=lambda entry: (entry.family or "", entry.id)
    )
    if args.family is not None:
        specs, unavailable = _of_family(specs, args.family), _of_family(unavailable, args.family)
        if not specs and not unavailable:
            _raise_unknown_family(args.family, rollenv.registry)
    if args.unavailable:
        print_table(
            ["id", "family", "why it cannot run here"],
            [[entry.id, entry.family or "-", entry.reason] for entry in unavailable],
            title=f"rollenv environments unavailable here: {len(unavailable)}",
            no_wrap_columns=1,
        )
        return 0
    rows = [
        [
            spec.id,
            spec.family or "-",
            "-" if spec.max_episode_steps is None else str(spec.max_episode_steps),
            spec.description,
        ]
        for spec in specs
    ]
    # an id that cannot run here is listed too, marked, with why and the command that fixes it
    rows += [
        [
            f"{entry.id} {UNAVAILABLE_MARK}",
            entry.family or "-",
            "-",
            f"unavailable here: {entry.reason}",
        ]
        for entry in unavailable
    ]
    rows.sort(key=lambda row: (row[1], row[0]))
    families = Counter(spec.family or "-" for spec in specs)
    title = f"rollenv environments: {len(specs)} ids in {len(families)} families"
    if unavailable:
        title += f"; {len(unavailable)} more, marked {UNAVAILABLE_MARK}, cannot run here"
    print_table(
        ["id", "family", "max turns", "description"],
        rows,
        title=title,
        no_wrap_columns=1,
    )
    missing = Counter(entry.family or "-" for entry in unavailable)
    print_table(
        ["family", "ids", "unavailable here"],
        [
            [family, str(families[family]), str(missing.get(family, 0))]
            for family in sorted(families | missing)
        ],
        title="families (roll-agent envs --family NAME; --unavailable: what cannot run and why)",
        no_wrap_columns=1,
    )
    return 0


def _of_family(entries: list[Any], family: str) -> list[Any]:
    """The specs (or unavailable entries) of ``family``, in any case."""
    return [entry for entry in entries if (entry.family or "").lower() == family.lower()]


def _raise_unknown_family(family: str, registry: Any) -> None:
    known = [*registry.values(), *registry.unavailable.values()]
    families = sorted({entry.family for entry in known if entry.family})
    close = difflib.get_close_matches(family.lower(), families, n=3, cutoff=0.5)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UsageError(
        f"no environment family {family!r}.{hint} Families: {', '.join(families) or '(none)'}"
    )


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

    spec = _env_spec(args.env)
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


# ---------------------------------------------------------------------------------- check
@dataclass(frozen=True)
class PolicyReport:
    """How one policy did over a run of episodes."""

    policy: str
    episodes: int
    success_rate: float
    valid_action_rate: float
    mean_return: float
    mean_turns: float

    @classmethod
    def of(cls, policy: str, results: Sequence[EpisodeResult]) -> PolicyReport:
        turns = sum(result.turns for result in results)
        valid = sum(result.valid_turns for result in results)
        return cls(
            policy=policy,
            episodes=len(results),
            success_rate=statistics.fmean(result.success for result in results),
            valid_action_rate=valid / turns if turns else 0.0,
            mean_return=statistics.fmean(result.total_reward for result in results),
            mean_turns=statistics.fmean(result.turns for result in results),
        )

    def row(self) -> list[str]:
        return [
            self.policy,
            str(self.episodes),
            f"{self.success_rate:.1%}",
            f"{self.valid_action_rate:.1%}",
            f"{self.mean_return:.2f}",
            f"{self.mean_turns:.1f}",
        ]


def run_check(args: argparse.Namespace) -> int:
    """``roll-agent check``: each env's checks in turn; 0 if all of them pass."""
    import rollenv
    from rollenv.policies import has_oracle

    if args.all == bool(args.env):
        raise UsageError("name the environments to check, or give --all (not both)")
    if args.all:
        specs = [spec for _, spec in sorted(rollenv.registry.items())]
        if args.reward:
            specs = [spec for spec in specs if has_oracle(spec)]
    else:
        specs = [_env_spec(env_id) for env_id in args.env]  # every id checked before any runs
    statuses, reports = [], []
    for index, spec in enumerate(specs):
        if index:
            print()
        if args.reward:
            status, report = _check_reward(spec, args)
            reports.append(report)
        else:
            status = _check_policies(spec, args)
        statuses.append(status)
    if len(reports) > 1:
        print()
        print_table(
            [
                "env",
                "seeds",
                "oracle success",
                "best-paid task-ignoring reply: mean return",
                "of oracle",
                "best success",
                "random baseline",
                "verdict",
            ],
            [_reward_summary_row(report) for report in reports if report is not None],
            title="Replies that ignore the task, against the oracle (rollenv.check_reward)",
            no_wrap_columns=2,
        )
    return max(statuses)


def _baseline_text(baseline: Any) -> str:
    share = "" if baseline.share is None else f", {baseline.share:.0%} of oracle"
    return f"{baseline.success_rate:.1%} success{share}"


def _reward_summary_row(report: Any) -> list[str]:
    """One line of the summary: the oracle, the best-paid task-ignoring reply, the baseline."""
    counted = [p for p in report.probes if p.counted]
    best = max(counted, key=lambda p: p.mean_return)
    share = best.share
    baseline = report.random_baseline
    return [
        report.env_id,
        str(len(report.seeds)),
        f"{report.oracle.success_rate:.1%}",
        f"{best.mean_return:.3f} ({best.name})",
        "n/a" if share is None else f"{share:.1%}",
        f"{max(p.success_rate for p in counted):.1%}",
        "n/a" if baseline is None else _baseline_text(baseline),
        "PASS" if report.passed else "GAMEABLE: " + ", ".join(p.name for p in report.gaming),
    ]


def _check_reward(spec: EnvSpec, args: argparse.Namespace) -> tuple[int, Any]:
    """``check --reward``: ``check_env``, then ``rollenv.check_reward``'s table.

    Returns:
        The exit status and the ``RewardReport`` (``None`` where there was no oracle).
    """
    import rollenv

    env = rollenv.make(spec.id)
    print(f"Checking the reward of {spec.id}: {args.episodes} seeds from {args.seed}.")
    check_error = _check_env_error(rollenv.make(spec.id))
    print("check_env: passed" if check_error is None else f"check_env: FAILED: {check_error}")
    seeds = range(args.seed, args.seed + args.episodes)
    try:
        with episode_progress(total=args.episodes, unit="seeds") as advance:
            # check_reward reports once per seed, when every reply has played it
            report = rollenv.check_reward(
                env, seeds, raise_on_failure=False, progress=lambda _: advance("oracle and probe")
            )
    except NotImplementedError as error:
        print(f"FAIL: no oracle to compare rewards with ({error}).")
        return 1, None
    finally:
        env.close()
    print_table(
        ["reply", "episodes", "mean return", "of oracle", "success", "verdict"],
        report.rows(),
        title=f"{spec.id}: replies that ignore the task, against the oracle",
        no_wrap_columns=1,
    )
    tolerance = report.tolerance
    limits = (
        f"at most {tolerance.max_share:.0%} of the oracle's return and "
        f"{tolerance.max_success:.0%} success"
    )
    baseline = report.random_baseline
    if baseline is not None:
        print(
            f"random action words (baseline, not judged): {baseline.success_rate:.1%} success, "
            f"mean return {baseline.mean_return:.3f}"
        )
    oracle_solves = report.oracle.success_rate
    passed = check_error is None and report.passed
    if report.passed:
        verdict = f"every task-ignoring reply within the tolerance ({limits})"
    else:
        names = ", ".join(repr(p.name) for p in report.gaming)
        verdict = f"replies that ignore the task earn reward: {names} (tolerance: {limits})"
    if check_error is not None:
        verdict = "check_env failed; " + verdict
    print(f"{'PASS' if passed else 'FAIL'}: {verdict}; the oracle solved {oracle_solves:.1%}.")
    return (0 if passed else 1), report


def _check_policies(spec: EnvSpec, args: argparse.Namespace) -> int:
    """``check``: ``check_env``, then random and oracle episodes; 0 if all is well."""
    import rollenv
    from rollenv.policies import RandomPolicy, oracle_for

    env = rollenv.make(spec.id)
    print(f"Checking {spec.id}: {args.episodes} episodes per policy, seeds from {args.seed}.")

    check_error = _check_env_error(rollenv.make(spec.id))  # its own instance: it may close it
    print("check_env: passed" if check_error is None else f"check_env: FAILED: {check_error}")

    policies: dict[str, Callable[[int], Policy]] = {
        "random": lambda seed: RandomPolicy(env, seed=seed)
    }
    try:
        oracle_for(env)
        policies["oracle"] = lambda seed: oracle_for(env)
    except NotImplementedError as error:
        print(f"oracle: no oracle ({error})")

    reports = _run_policies(env, policies, args.episodes, args.seed)
    print_table(
        ["policy", "episodes", "success rate", "valid-action rate", "mean return", "mean turns"],
        [report.row() for report in reports],
        title=spec.id,
    )
    oracle = next((report for report in reports if report.policy == "oracle"), None)
    random_report = reports[0]
    deterministic = getattr(env.unwrapped, "deterministic", True)
    passed = check_error is None and _oracle_ok(oracle, random_report, deterministic)
    print(_check_verdict(passed, check_error, oracle, random_report, deterministic))
    return 0 if passed else 1


def _oracle_ok(
    oracle: PolicyReport | None, random_report: PolicyReport, deterministic: bool
) -> bool:
    """A deterministic env's oracle must solve 90%; a stochastic env's must beat random."""
    if oracle is None:
        return True
    if deterministic:
        return oracle.success_rate >= ORACLE_SUCCESS_THRESHOLD
    return oracle.success_rate > random_report.success_rate


def _check_env_error(env: gym.Env) -> str | None:
    """Runs Gymnasium's ``check_env`` on the unwrapped env; returns its error, or ``None``."""
    from gymnasium.utils.env_checker import check_env

    try:
        check_env(env.unwrapped)
    except Exception as error:  # noqa: BLE001 - any failure of the env is the report
        return f"{type(error).__name__}: {error}"
    return None


def _run_policies(
    env: gym.Env,
    policies: dict[str, Callable[[int], Policy]],
    episodes: int,
    first_seed: int,
) -> list[PolicyReport]:
    """Runs ``episodes`` episodes of each policy (episode i: seed ``first_seed + i``)."""
    from rollenv.policies import run_episode

    reports = []
    with episode_progress(total=episodes * len(policies)) as advance:
        for name, make_policy in policies.items():
            results = []
            for seed in range(first_seed, first_seed + episodes):
                results.append(run_episode(env, make_policy(seed), seed=seed))
                advance(name)
            reports.append(PolicyReport.of(name, results))
    return reports


def _check_verdict(
    passed: bool,
    check_error: str | None,
    oracle: PolicyReport | None,
    random_report: PolicyReport,
    deterministic: bool,
) -> str:
    reasons = []
    if check_error is not None:
        reasons.append("check_env failed")
    if oracle is None:
        reasons.append("no oracle to prove the env solvable")
    else:
        solved = f"the oracle solved {oracle.success_rate:.1%} of {oracle.episodes} episodes"
        if deterministic:
            reasons.append(f"{solved} (needs >= {ORACLE_SUCCESS_THRESHOLD:.0%})")
        else:
            reasons.append(
                f"{solved} (a stochastic env: needs more than random's "
                f"{random_report.success_rate:.1%})"
            )
    return ("PASS: " if passed else "FAIL: ") + "; ".join(reasons) + "."
