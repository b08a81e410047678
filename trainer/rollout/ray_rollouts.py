"""``RayRollouts``: a training run's rollouts on Ray (``rollout.mode: ray``).

The pipeline stays the single controller; this object owns the Ray side of it:

* a :class:`~trainer.generation.fleet.GeneratorFleet` (``rollout.generator_replicas``),
* ``rollout.env_managers`` :class:`~trainer.rollout.env_actor.EnvManagerActor` actors with
  ``rollout.envs_per_manager`` envs each, placed by ``rollout.env_manager_resources``,
* a :class:`~trainer.rollout.scheduler.RolloutScheduler` for training groups (redundancy,
  timeouts, retries, staleness) and one for greedy evaluation episodes (on actors of their own
  when ``env.eval_kwargs`` makes the evaluation envs otherwise).

Asynchronous training (``rollout.async_generation_ratio = k``): before step n collects its
groups, the groups of steps n .. n+k are all started, under the weights of version n-1. So while
step n trains, the episodes of the next k steps keep playing against the fleet, which gets the
new weights between two of its batches. A group trained at step n started at most k versions
earlier; an older one (it finished late) is dropped and replaced, never trained on. With
``k = 0`` every group of step n starts under version n-1 and rollout and training alternate.

Partial rollouts (``rollout.partial_rollouts``): no group is dropped. An episode plays on under
each new version from its next turn, every sampled token records the version that sampled it
(``Sample.weight_versions``), and a token more than k versions older than the weights it is
trained from gets loss mask 0 (its episode's return still counts in its group).

Example:
    >>> rollouts = RayRollouts(config, "tiny-random", tokenizer, sampling)  # doctest: +SKIP
    >>> rollouts.push_weights(policy.state_dict(), version=0)  # doctest: +SKIP
    >>> trajectories = rollouts.rollout(step=1, version=0)  # doctest: +SKIP

It implements :class:`~trainer.rollout.rollouts.Rollouts`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trainer.cluster_gpus import check_gpus, generator_demand
from trainer.config import Config
from trainer.generation.base import SamplingParams
from trainer.generation.fleet import GeneratorFleet
from trainer.rollout.env_actor import launch_env_managers, shared_tokenizer
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.scheduler import RolloutScheduler
from trainer.rollout.seeds import step_seeds
from trainer.rollout.trajectory import Trajectory

if TYPE_CHECKING:
    from trainer.rewards.pool import RewardPool

__all__ = ["RayRollouts", "mask_stale_tokens"]


def mask_stale_tokens(
    trajectories: list[Trajectory], version: int, bound: int | None
) -> dict[str, float]:
    """Sets the loss mask to 0 on every sampled token more than ``bound`` weight versions
    older than ``version`` (``None``: masks nothing), and returns the staleness of the sampled
    tokens: ``rollout/token_staleness_mean`` and ``_max`` (versions behind ``version``) and
    ``rollout/stale_tokens_masked`` (the share masked). Tokens without a recorded version
    (``Sample.weight_versions`` is ``None``) are not counted.

    Example:
        >>> from trainer.rollout.trajectory import Sample
        >>> sample = Sample([1, 2, 3, 4], [0, 1, 1, 1], [0.0] * 4, [-1, 0, 1, 2],
        ...                 weight_versions=[-1, 3, 5, 6])
        >>> episode = Trajectory("Sokoban-v0", seed=0, group_id=0, samples=[sample])
        >>> stats = mask_stale_tokens([episode], version=6, bound=2)
        >>> stats["rollout/token_staleness_max"], round(stats["rollout/stale_tokens_masked"], 3)
        (3.0, 0.333)
        >>> sample.loss_mask  # the token of version 3 is 3 versions behind 6
        [0, 0, 1, 1]
    """
    behind: list[int] = []
    masked = 0
    for trajectory in trajectories:
        for sample in trajectory.samples:
            if sample.weight_versions is None:
                continue
            for index, (trained, sampled_by) in enumerate(
                zip(sample.loss_mask, sample.weight_versions, strict=True)
            ):
                if not trained or sampled_by < 0:
                    continue
                behind.append(version - sampled_by)
                if bound is not None and version - sampled_by > bound:
                    sample.loss_mask[index] = 0
                    masked += 1
    if not behind:
        return {}
    return {
        "rollout/token_staleness_mean": sum(behind) / len(behind),
        "rollout/token_staleness_max": float(max(behind)),
        "rollout/stale_tokens_masked": masked / len(behind),
    }


class RayRollouts:
    """Env manager actors, a generator fleet and the schedulers over them, as ``config`` says.

    Args:
        config: the run's configuration (its ``rollout``, ``env`` and ``generation`` sections).
        model: the model the fleet starts from (a preset or a model folder); the pipeline
            pushes its policy's weights before the first step anyway.
        tokenizer: the policy's tokenizer (env actors get a torch-free copy of it).
        sampling: sampling parameters of training episodes.
        reward_pool: reward workers: the envs are made with ``defer_reward=True`` and the
            schedulers hand ended episodes to the pool.
    """

    def __init__(
        self,
        config: Config,
        model: str,
        tokenizer: Any,
        sampling: SamplingParams,
        reward_pool: RewardPool | None = None,
    ) -> None:
        import ray

        self.config = config
        settings, env = config.rollout, config.env
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            ray.init(address=settings.ray_address, include_dashboard=False, log_to_driver=False)
        check_gpus([generator_demand(settings)], ray.cluster_resources().get("GPU", 0))
        generation = config.generation
        options: dict[str, Any] = {
            "max_batch_size": generation.max_batch_size,
            **generation.engine_options(),
        }
        self.fleet = GeneratorFleet(
            model,
            replicas=settings.generator_replicas,
            bucket_mb=settings.weight_bucket_mb,
            num_cpus=settings.generator_cpus,
            num_gpus=settings.generator_gpus,
            backend=generation.backend,
            seed=config.train.seed,
            torch_threads=settings.generator_threads,
            in_flight_weights=settings.in_flight_weights,
            **options,
        )
        placement = (
            {"resources": dict(settings.env_manager_resources)}
            if settings.env_manager_resources
            else None
        )
        deferred = {"defer_reward": True} if reward_pool else {}
        # the training and the evaluation actors start from one copy of the tokenizer
        tokenizer = shared_tokenizer(tokenizer)

        def env_managers(env_kwargs: dict[str, Any]) -> list[Any]:
            return launch_env_managers(
                settings.env_managers,
                env.id,
                tokenizer,
                self.fleet.replicas,
                num_cpus=settings.env_manager_cpus,
                actor_options=placement,
                max_envs=settings.envs_per_manager,
                episode_timeout_s=settings.episode_timeout_s,
                sampling=sampling,
                env_kwargs={**env_kwargs, **deferred},
                max_turns=env.max_turns,
                context=env.context,
                window=env.window,
                max_context_tokens=env.max_context_tokens,
                reply_prefix=env.reply_prefix,
            )

        self.env_actors = env_managers(env.make_kwargs)
        # evaluation envs made otherwise (env.eval_kwargs) get their own actors; else the
        # training actors play the evaluation episodes between their groups
        self.eval_actors = env_managers(env.eval_make_kwargs) if env.eval_kwargs else []
        self.scheduler = RolloutScheduler(
            self.env_actors,
            group_size=env.group_size,
            redundancy=settings.redundancy,
            max_staleness=settings.async_generation_ratio,
            max_retries=settings.max_retries,
            reward_pool=reward_pool,
            partial_rollouts=settings.partial_rollouts,
        )
        self.eval_scheduler = RolloutScheduler(
            self.eval_actors or self.env_actors, group_size=1, max_retries=settings.max_retries,
            reward_pool=reward_pool,
        )  # fmt: skip
        self.eval_sampling = replace(sampling, temperature=0.0)  # greedy
        self._groups_collected = 0  # what a checkpoint keeps: a resumed run goes on from here
        self.last_staleness: list[int] = []  # weight versions behind, of the last step's groups
        self.token_staleness: dict[str, float] = {}  # of the last step's sampled tokens
        self._played: list[Trajectory] = []  # the last step's

    def _group_seed(self, number: int) -> int:
        """The reset seed of the run's ``number``-th training group (its data order)."""
        groups = self.config.env.groups_per_step
        step, index = divmod(number, groups)
        return step_seeds(self.config.train.seed, step + 1, groups)[index]

    def rollout(self, step: int, version: int) -> list[Trajectory]:
        """The trajectories of step ``step``'s ``env.groups_per_step`` groups.

        Starts the groups of steps ``step .. step + async_generation_ratio`` that are not
        running yet (under weights ``version``), replacing any dropped as stale, then waits for
        the oldest complete ones.
        """
        per_step = self.config.env.groups_per_step
        groups = self.scheduler.training_step(version, per_step, self._group_seed)
        self._groups_collected += len(groups)
        self.last_staleness = [version - g.version for g in groups]
        self._played = [t for g in groups for t in g.trajectories]
        bound = self.config.rollout.async_generation_ratio
        self.token_staleness = mask_stale_tokens(
            self._played, version, bound if self.config.rollout.partial_rollouts else None
        )
        return list(self._played)

    def evaluate(self, version: int) -> dict[str, float]:
        """``eval/`` metrics of greedy episodes on the seeds ``0 .. train.eval_groups - 1``."""
        seeds = list(range(self.config.train.eval_groups))
        return rollout_metrics(self.play_evaluation(seeds, self.eval_sampling, version), "eval")

    def play_evaluation(
        self, seeds: list[int], sampling: SamplingParams, version: int
    ) -> list[Trajectory]:
        """One episode per seed with ``sampling`` (greedy evaluation), in seed order."""
        for index, seed in enumerate(seeds):
            self.eval_scheduler.submit(seed, group_id=index, version=version, sampling=sampling)
        groups = sorted(self.eval_scheduler.collect(len(seeds), version), key=lambda g: g.group_id)
        return [t for g in groups for t in g.trajectories]

    def push_weights(self, state_dict: Any, version: int) -> None:
        """Sends the policy's weights to every generator replica (in buckets)."""
        self.fleet.push_weights(state_dict, version)

    def pause(self) -> None:
        """Stops the generator fleet between two batches: episodes started ahead
        (``rollout.async_generation_ratio``) wait, their turns queued, until :meth:`resume`.
        An evaluation on a generator of its own pauses it, so they do not play on while the
        run's clock is stopped."""
        self.fleet.pause()

    def resume(self) -> None:
        """Lets the generator fleet run again after :meth:`pause`."""
        self.fleet.resume()

    def metrics(self) -> dict[str, float]:
        """The last step's ``rollout/`` metrics, the schedulers' counters and the staleness of
        the last step's groups."""
        out = rollout_metrics(self._played, "rollout") if self._played else {}
        out.update({f"rollout/{name}": float(v) for name, v in self.scheduler.metrics.items()})
        staleness = self.last_staleness
        if staleness:
            out["rollout/staleness_mean"] = sum(staleness) / len(staleness)
            out["rollout/staleness_max"] = float(max(staleness))
        out.update(self.token_staleness)
        return out

    def state_dict(self) -> dict[str, Any]:
        """How many training groups were collected: a resumed run numbers its groups on from
        there, so it plays the seeds an uninterrupted run would have played next. Groups that
        were started ahead (``async_generation_ratio``) and not collected are played again."""
        return {"ray_groups_collected": self._groups_collected}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Goes on numbering groups after the checkpoint's (a checkpoint written before this
        was kept starts from group 0)."""
        self._groups_collected = state.get("ray_groups_collected", 0)
        self.scheduler.groups_started = self._groups_collected

    def shutdown(self) -> None:
        """Aborts what runs, stops the actors, and stops Ray if this object started it."""
        import ray

        self.scheduler.cancel_all()
        self.eval_scheduler.cancel_all()
        for actor in self.env_actors + self.eval_actors:
            ray.kill(actor, no_restart=True)
        self.fleet.shutdown()
        if self._started_ray:
            ray.shutdown()
