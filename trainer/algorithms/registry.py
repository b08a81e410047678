"""The registry of advantage estimators: ``algorithm.name`` -> what it computes and what it needs.

Everything that depends on the estimator reads its :class:`AlgorithmSpec` here: the config's
allowed names and rules, the ``--algo`` choices of ``roll-agent train``, credit assignment
(:func:`trainer.training.credit.assign_credit`), the memory plan and the strategy (a critic's value
head), and the pipeline (the critic's values). This module imports neither torch nor Ray, so
the CLI can list the names before anything heavy loads; a built-in's function is named by a
``"module:function"`` reference and imported on first use. Nothing else of the trainer is
imported either: the config reads this registry, and the credit functions read the config.

Adding an algorithm
-------------------

Write one module with its credit function and register it; nothing else changes. The credit
function (a :class:`trainer.training.credit.CreditFunction`) gets the step's trajectories, one
return per trajectory, the ``algorithm`` config section and (for an estimator that ``needs_critic``)
the critic's per-token values of each sample, and returns a :class:`trainer.training.credit.Credit`:
one advantage per token of every sample, in trajectory order (and, with a critic, the returns it
regresses to)::

    import torch

    from trainer.algorithms import AlgorithmSpec, register_algorithm
    from trainer.training.credit import Credit, per_episode_credit


    def best_of_group_credit(trajectories, episode_rewards, settings, values=None):
        groups = torch.tensor([t.group_id for t in trajectories])
        best = torch.stack([episode_rewards[groups == g].max() for g in groups])
        return Credit(per_episode_credit(trajectories, (episode_rewards == best).float()))


    register_algorithm(
        AlgorithmSpec(
            name="best-of-group",
            credit=best_of_group_credit,
            granularity="episode",
            description="1 on every token of each group's best episodes, 0 elsewhere",
        )
    )

Import that module before the config is built (``algorithm.name=best-of-group`` is then
allowed). ``tests/trainer/algorithms/test_algorithm_registry.py`` trains a step with such an
estimator. ``docs/extending/algorithm-and-strategy.md`` says what the trainer does with each field.

Example:
    >>> from trainer.algorithms import ALGORITHMS, algorithm_spec
    >>> list(ALGORITHMS)
    ['starpo', 'grpo', 'gigpo', 'ppo', 'rloo', 'reinforce++', 'raft']
    >>> spec = algorithm_spec("ppo")
    >>> spec.granularity, spec.needs_critic, spec.needs_full_context, spec.needs_every_episode
    ('token', True, True, True)
    >>> algorithm_spec("gipgo")
    Traceback (most recent call last):
    ...
    trainer.algorithms.registry.UnknownAlgorithmError: Input should be 'starpo', 'grpo', 'gigpo', \
'ppo', 'rloo', 'reinforce++' or 'raft' (got 'gipgo'; did you mean 'gigpo' or 'grpo'?)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from trainer.lazy_reference import load_reference
from trainer.named_registry import NamedRegistry

Granularity = Literal["episode", "turn", "token"]


class UnknownAlgorithmError(ValueError):
    """No algorithm of that name is registered; the message lists those that are."""


@dataclass(frozen=True)
class AlgorithmSpec:
    """One advantage estimator and what the rest of the trainer must do for it.

    Attributes:
        name: the value of ``algorithm.name`` (and ``--algo``).
        credit: the function that lays advantages onto samples (a
            :class:`trainer.training.credit.CreditFunction`), or a ``"module:function"`` reference
            to it, imported on first use.
        granularity: what one advantage covers: a whole ``episode``, one ``turn`` (a reply),
            or each ``token``.
        description: one line, for listings and help.
        needs_critic: the credit function needs the critic's values (the policy gets a value
            head, and the pipeline computes values with the old log-probs).
        needs_full_context: it scores whole episodes, so it needs ``env.context=full``.
        needs_every_episode: its loss uses every episode, even those of a group with equal
            returns (``algorithm.skip_zero_advantage`` is refused).
    """

    name: str
    credit: Callable[..., Any] | str
    granularity: Granularity
    description: str
    needs_critic: bool = False
    needs_full_context: bool = False
    needs_every_episode: bool = False

    def credit_function(self) -> Callable[..., Any]:
        """The credit function, imported now if it was registered by reference."""
        if isinstance(self.credit, str):
            return load_reference(self.credit)
        return self.credit


_CREDIT = "trainer.training.credit"

#: ``algorithm.name`` when a config gives none.
DEFAULT_ALGORITHM = "starpo"
_registry = NamedRegistry[AlgorithmSpec]("algorithm", UnknownAlgorithmError)

#: Every registered estimator by name, in registration order (a read-only view).
ALGORITHMS: Mapping[str, AlgorithmSpec] = _registry.view


def register_algorithm(spec: AlgorithmSpec, *, replace: bool = False) -> AlgorithmSpec:
    """Adds an estimator, so ``algorithm.name`` (and ``--algo``) accept its name.

    Args:
        spec: the estimator and its needs.
        replace: put ``spec`` in place of a registered estimator of the same name.

    Returns:
        ``spec``.

    Raises:
        ValueError: the name is empty, or taken and ``replace`` is false.
    """
    return _registry.add(spec, replace=replace)


def unregister_algorithm(name: str) -> AlgorithmSpec:
    """Removes a registered estimator (a test's own, when it is done).

    Args:
        name: the estimator's name.

    Returns:
        The spec that was registered.
    """
    return _registry.remove(name)


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The registered estimator called ``name``.

    Args:
        name: a value of ``algorithm.name``.

    Returns:
        Its spec.

    Raises:
        UnknownAlgorithmError: no estimator has that name; the message lists those that do
            and the closest.
    """
    return _registry.get(name)


for _spec in (
    AlgorithmSpec(
        "starpo",
        f"{_CREDIT}:grpo_credit",
        "episode",
        "StarPO: each episode's return normalised within its group, on all its tokens",
    ),
    AlgorithmSpec(
        "grpo",
        f"{_CREDIT}:grpo_credit",
        "episode",
        "GRPO: each episode's return normalised within its group, on all its tokens",
    ),
    AlgorithmSpec(
        "gigpo",
        f"{_CREDIT}:gigpo_credit",
        "turn",
        "GiGPO: an episode-level advantage plus one per anchor state, on each turn's tokens",
    ),
    AlgorithmSpec(
        "ppo",
        f"{_CREDIT}:gae_credit",
        "token",
        "PPO: GAE over each turn's reward against a critic's values",
        needs_critic=True,
        needs_full_context=True,
        needs_every_episode=True,
    ),
    AlgorithmSpec(
        "rloo",
        f"{_CREDIT}:rloo_credit",
        "episode",
        "RLOO: each episode's return less the mean of the rest of its group",
    ),
    AlgorithmSpec(
        "reinforce++",
        f"{_CREDIT}:reinforce_pp_credit",
        "token",
        "REINFORCE++: return-to-go of each turn's reward, normalised over the batch",
    ),
    AlgorithmSpec(
        "raft",
        f"{_CREDIT}:raft_credit",
        "episode",
        "RAFT: the positive part of the group-normalised return (no episode pushed down)",
    ),
):
    register_algorithm(_spec)
del _spec
