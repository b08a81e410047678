"""``check_reward``: does an env's reward measure the task, or can a reply that ignores it earn it?

Gymnasium's ``check_env`` proves an env keeps the API. RL needs more: it finds the cheapest way
to reward before it finds the task, so a reward that pays a copied question or a stub that
returns ``None`` is what a policy learns. ``check_reward`` plays the env's oracle and a battery
of *probes* (replies that ignore the task) over many seeds, and compares their returns:

* the generic battery: empty and whitespace answers, the observation or the instruction copied
  back (once, repeated, without the tag), padding to the action space's length limit, walls of
  format markers, the oracle's own answer in the wrong tag;
* the family's own probes, from ``TextEnv.task_ignoring_replies()`` (code: stubs that return
  ``None``, ``True``, ``[]``, the input...; math: the expression restated, every number of the
  question...);
* random replies built from the env's action words: the baseline a random policy earns,
  reported apart and never counted as gaming.

Each probe's mean return is reported as a share of the oracle's mean return over the same seeds,
with its success rate. A probe beats the env's ``RewardTolerance`` (``TextEnv.reward_tolerance``;
by default no more than 5% of the oracle's return and no success at all) and ``check_reward``
raises ``GameableRewardError`` with the table.

Example:
    >>> import rollenv
    >>> report = rollenv.check_reward(rollenv.make("Sokoban-v0"), seeds=range(3))
    >>> report.passed, report.oracle.success_rate
    (True, 1.0)
    >>> "observation copied" in report.table()
    True
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from rollenv.policies import (
    Policy,
    RandomPolicy,
    ToolCallingPolicy,
    oracle_for,
    run_episode,
    text_env_of,
)
from rollenv.reward_tolerance import RewardTolerance
from rollenv.text_env import TextEnv
from rollenv.tool_calls import tool_env_of

#: the probe that plays random action words: a baseline, never counted as gaming
RANDOM_BASELINE = "random action words"


@dataclass(frozen=True)
class ProbeResult:
    """What one reply (the oracle, a probe or the random baseline) earned over its episodes.

    Attributes:
        name: the reply's name (``"oracle"``, ``"observation copied"``...).
        returns: the return of each episode, in seed order.
        successes: whether each episode succeeded.
        oracle_returns: the oracle's return on the same seeds.
        counted: False for the oracle and the random baseline (reported, never judged).
    """

    name: str
    returns: tuple[float, ...]
    successes: tuple[bool, ...]
    oracle_returns: tuple[float, ...]
    counted: bool = True

    @property
    def episodes(self) -> int:
        return len(self.returns)

    @property
    def mean_return(self) -> float:
        return statistics.fmean(self.returns) if self.returns else 0.0

    @property
    def success_rate(self) -> float:
        return statistics.fmean(self.successes) if self.successes else 0.0

    @property
    def share(self) -> float | None:
        """Mean return over the oracle's mean return on the same seeds (None if that is <= 0)."""
        oracle = statistics.fmean(self.oracle_returns) if self.oracle_returns else 0.0
        return self.mean_return / oracle if oracle > 0 else None

    def within(self, tolerance: RewardTolerance) -> bool:
        """Whether this reply earns no more than ``tolerance`` allows."""
        if self.success_rate > tolerance.max_success:
            return False
        share = self.share
        if share is None:  # the oracle earns nothing positive: a probe may not either
            return self.mean_return <= 0
        return share <= tolerance.max_share


@dataclass(frozen=True)
class RewardReport:
    """The outcome of ``check_reward``: the oracle's results, each probe's, the verdict."""

    env_id: str
    seeds: tuple[int, ...]
    tolerance: RewardTolerance
    oracle: ProbeResult
    probes: tuple[ProbeResult, ...] = field(default_factory=tuple)

    @property
    def gaming(self) -> list[ProbeResult]:
        """The counted probes that earn more than the tolerance allows."""
        return [p for p in self.probes if p.counted and not p.within(self.tolerance)]

    @property
    def passed(self) -> bool:
        return not self.gaming

    @property
    def random_baseline(self) -> ProbeResult | None:
        return next((p for p in self.probes if p.name == RANDOM_BASELINE), None)

    def rows(self) -> list[list[str]]:
        """One row per reply: name, episodes, mean return, share, success, verdict."""
        rows = []
        for result in (self.oracle, *self.probes):
            share = result.share
            if result is self.oracle:
                verdict = "reference"
            elif not result.counted:
                verdict = "baseline"
            else:
                verdict = "ok" if result.within(self.tolerance) else "GAMEABLE"
            rows.append(
                [
                    result.name,
                    str(result.episodes),
                    f"{result.mean_return:.3f}",
                    "n/a" if share is None else f"{share:.1%}",
                    f"{result.success_rate:.1%}",
                    verdict,
                ]
            )
        return rows

    def table(self) -> str:
        """The report as aligned plain text, one row per reply."""
        columns = ["reply", "episodes", "mean return", "of oracle", "success", "verdict"]
        rows = self.rows()
        widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
        lines = [
            f"{self.env_id}: {len(self.seeds)} seeds; tolerance: at most "
            f"{self.tolerance.max_share:.0%} of the oracle's return and "
            f"{self.tolerance.max_success:.0%} success",
            "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip(),
            "  ".join("-" * w for w in widths),
        ]
        lines += [
            "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
        ]
        return "\n".join(lines)


class GameableRewardError(AssertionError):
    """A reply that ignores the task earns more than the env's tolerance allows.

    Attributes:
        report: the full ``RewardReport``; the message holds its table.
    """

    def __init__(self, report: RewardReport):
        self.report = report
        names = ", ".join(
            f"{p.name!r} ({_share_text(p)} of the oracle's return, {p.success_rate:.0%} success)"
            for p in report.gaming
        )
        super().__init__(
            f"{report.env_id}: replies that ignore the task earn reward: {names}.\n{report.table()}"
        )


def _share_text(result: ProbeResult) -> str:
    share = result.share
    return f"mean return {result.mean_return:.3f}" if share is None else f"{share:.1%}"


# ---------------------------------------------------------------------------------- the probes
#: A probe builds the reply of one turn from (observation, reset info, the text env).
ReplyFunction = Callable[[str, dict[str, Any], TextEnv], str]


def _wrapped(text: str, env: TextEnv) -> str:
    return env.answer_format.wrap(text)


def _padding(observation: str, env: TextEnv) -> str:
    """The observation repeated inside the answer tag, up to the action space's length limit."""
    shell = _wrapped("", env)
    room = max(0, env.action_space.max_length - len(shell))
    unit = (observation or "x") + "\n"
    return _wrapped((unit * (room // len(unit) + 1))[:room], env)


def _format_wall(env: TextEnv) -> str:
    tag, think = env.answer_format.tag or "answer", env.answer_format.think_tag or "think"
    return f"<{think}></{think}><{tag}></{tag}>" * 100 + f"<{tag}>" * 50 + f"</{tag}>" * 50


GENERIC_PROBES: dict[str, ReplyFunction] = {
    "empty reply": lambda obs, info, env: "",
    "empty answer": lambda obs, info, env: _wrapped("", env),
    "whitespace answer": lambda obs, info, env: _wrapped(" \n\t ", env),
    "observation copied": lambda obs, info, env: _wrapped(obs, env),
    "observation repeated": lambda obs, info, env: _wrapped("\n".join([obs] * 3), env),
    "observation, no tag": lambda obs, info, env: obs,
    "instruction copied": lambda obs, info, env: _wrapped(info.get("instruction", ""), env),
    "padding to the length limit": lambda obs, info, env: _padding(obs, env),
    "wall of format markers": lambda obs, info, env: _format_wall(env),
}


class _ReplyPolicy:
    """A policy that answers every turn with ``reply(observation, reset info, env)``."""

    def __init__(self, env: gym.Env, reply: ReplyFunction):
        self._env = text_env_of(env)
        self._reply = reply
        self._reset_info: dict[str, Any] = {}

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if "instruction" in info:
            self._reset_info = info
        return self._reply(observation, self._reset_info, self._env)


class _FamilyProbePolicy:
    """Answers every turn with the env's own task-ignoring reply ``name`` for this state."""

    def __init__(self, env: gym.Env, name: str):
        self._env = text_env_of(env)
        self._name = name

    def act(self, observation: str, info: dict[str, Any]) -> str:
        return self._env.task_ignoring_replies().get(self._name, "")


class _WrongTagPolicy:
    """The oracle's own reply, with its answer tag renamed: the right answer, the wrong tag."""

    def __init__(self, env: gym.Env):
        self._oracle = oracle_for(env)
        self._tag = text_env_of(env).answer_format.tag

    def act(self, observation: str, info: dict[str, Any]) -> str:
        reply = self._oracle.act(observation, info)
        return re.sub(rf"<(/?){re.escape(self._tag)}>", r"<\1response>", reply, flags=re.IGNORECASE)


# ---------------------------------------------------------------------------------- the check
def check_reward(
    env: gym.Env,
    seeds: Iterable[int] = range(20),
    *,
    tolerance: RewardTolerance | None = None,
    options: Callable[[int], dict[str, Any] | None] | None = None,
    raise_on_failure: bool = True,
    progress: Callable[[int], None] | None = None,
) -> RewardReport:
    """Plays the oracle and every task-ignoring probe over ``seeds``; raises if a probe earns.

    Args:
        env: a rollenv env (wrapped or not) whose family has an oracle.
        seeds: the episodes' seeds; every reply plays each seed once.
        tolerance: overrides the env's ``reward_tolerance``.
        options: reset options per seed (e.g. ``lambda s: {"index": s}`` walks a problem set).
        raise_on_failure: raise ``GameableRewardError`` when a probe beats the tolerance.
        progress: called with the number of seeds done, after each seed's episodes.

    Returns:
        The ``RewardReport``; ``report.table()`` prints it.

    Raises:
        GameableRewardError: a task-ignoring reply beat the tolerance (the message has the table).
        NotImplementedError: the env's family has no oracle to compare with.
    """
    text_env = text_env_of(env)
    oracle_for(env)  # fails early, with the family's name, where there is none
    seeds = tuple(seeds)
    if not seeds:
        raise ValueError("check_reward needs at least one seed")
    tolerance = tolerance or text_env.reward_tolerance or RewardTolerance()

    def play(policy: Policy, seed: int) -> tuple[float, bool]:
        result = run_episode(env, policy, seed=seed, options=options and options(seed))
        return result.total_reward, result.success

    tools = tool_env_of(env) is not None

    def in_format(policy: Policy) -> Policy:
        # in the tools format each probe's reply is sent as the call that makes the same move
        return ToolCallingPolicy(policy, env) if tools else policy

    policies: dict[str, Callable[[], Policy]] = {
        name: (lambda reply=reply: in_format(_ReplyPolicy(env, reply)))
        for name, reply in GENERIC_PROBES.items()
    }
    if text_env.answer_format.tag is not None and not tools:  # a call has no tag to rename
        policies["oracle's answer, wrong tag"] = lambda: _WrongTagPolicy(env)
    outcomes: dict[str, list[tuple[int, float, bool]]] = {"oracle": []}
    for index, seed in enumerate(seeds):
        outcomes["oracle"].append((index, *play(oracle_for(env), seed)))
        env.reset(seed=seed, options=options and options(seed))
        family = [
            (name, lambda name=name: in_format(_FamilyProbePolicy(env, name)))
            for name in text_env.task_ignoring_replies()
        ]
        baseline = [(RANDOM_BASELINE, lambda seed=seed: RandomPolicy(env, seed=seed))]
        for name, make_policy in [*policies.items(), *family, *baseline]:
            outcomes.setdefault(name, []).append((index, *play(make_policy(), seed)))
        if progress is not None:
            progress(index + 1)

    oracle_rows = outcomes.pop("oracle")
    oracle_returns = tuple(reward for _, reward, _ in oracle_rows)
    oracle_successes = tuple(success for _, _, success in oracle_rows)
    oracle = ProbeResult("oracle", oracle_returns, oracle_successes, oracle_returns, counted=False)
    probes = tuple(
        ProbeResult(
            name,
            tuple(reward for _, reward, _ in rows),
            tuple(success for _, _, success in rows),
            tuple(oracle_returns[index] for index, _, _ in rows),
            counted=name != RANDOM_BASELINE,
        )
        for name, rows in outcomes.items()
    )
    report = RewardReport(_env_id(env), seeds, tolerance, oracle, probes)
    if raise_on_failure and not report.passed:
        raise GameableRewardError(report)
    return report


def _env_id(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    if spec is not None and spec.id:
        return spec.id.removeprefix("rollenv/")
    return type(env.unwrapped).__name__


__all__: Sequence[str] = (
    "GENERIC_PROBES",
    "RANDOM_BASELINE",
    "GameableRewardError",
    "ProbeResult",
    "RewardReport",
    "RewardTolerance",
    "check_reward",
)
