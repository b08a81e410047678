"""``roll-agent check``: Gymnasium's env checker, then random and oracle episodes and their
success rates; with ``--reward``, ``rollenv.check_reward``'s table of task-ignoring replies.

Example:
    $ roll-agent check Sokoban-v0 --episodes 100
    $ roll-agent check MathVerify-v0 CodeSandbox-v0 --reward --episodes 20
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rollenv.commands.arguments import PROG, UsageError, env_spec, non_negative_int, positive_int
from rollenv.commands.terminal import episode_progress, print_table

if TYPE_CHECKING:
    import gymnasium as gym

    from rollenv import EnvSpec
    from rollenv.policies import EpisodeResult, Policy

ORACLE_SUCCESS_THRESHOLD = 0.9

__all__ = ["add_check_command", "run_check"]


def add_check_command(commands: argparse._SubParsersAction) -> None:
    """Adds ``check`` to ``roll-agent``'s subcommands."""
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
        specs = [env_spec(env_id) for env_id in args.env]  # every id checked before any runs
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
