"""``LocalRollouts``: a training run's rollouts in this process (``rollout.mode: local``).

One :class:`~trainer.rollout.env_manager.EnvManager` plays each step's ``env.groups_per_step``
groups in lockstep with the generator beside the trainer. What only local rollouts do lives
here too: dynamic sampling (groups whose returns are all equal replaced by new ones), the
curriculum that raises an env kwarg as training succeeds, self-play's pool of past versions
(``env.opponent_pool``), and freeing vLLM's GPU memory for the update
(``generation.offload``). It implements :class:`~trainer.rollout.rollouts.Rollouts`.

Seeds and sampling randomness derive from ``(train.seed, step)``, so a resumed run plays exactly
what an uninterrupted one would have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from trainer.config import Config
from trainer.evaluation.held_out import GreedyEvaluation
from trainer.evaluation.seat_matches import SeatMatches
from trainer.generation.base import SamplingParams
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.opponent_pool import OpponentPool, points
from trainer.rollout.seeds import step_seeds
from trainer.rollout.self_play import SelfPlayManager
from trainer.rollout.trajectory import Trajectory
from trainer.training.curriculum import Curriculum

__all__ = ["LocalRollouts", "informative_groups"]


def informative_groups(trajectories: list[Trajectory]) -> list[list[Trajectory]]:
    """The groups whose returns are not all equal (they carry an advantage), in group order."""
    groups: dict[int, list[Trajectory]] = {}
    for trajectory in trajectories:
        groups.setdefault(trajectory.group_id, []).append(trajectory)
    return [
        members
        for members in groups.values()
        if max(t.episode_return for t in members) - min(t.episode_return for t in members) > 1e-9
    ]


class LocalRollouts:
    """The env manager, the greedy evaluation and the curriculum of a local run.

    Args:
        config: the run's configuration.
        tokenizer: the policy's tokenizer.
        generator: the generator in this process (its weights are the policy's).
        sampling: sampling parameters of training episodes.
        reward_pool: reward workers that score the envs' answers, if any.
        past_generator: with ``env.opponent_pool``, a generator of its own (a copy of the
            model) for the past versions to play with.
        log: where a curriculum raise is reported.

    Attributes:
        generator: the generator.
        manager: the env manager of training episodes.
        evaluation: the greedy evaluation on held-out seeds.
        curriculum: the curriculum, with ``env.curriculum``.
        pool: the past versions of the policy, with ``env.opponent_pool``.
    """

    def __init__(
        self,
        config: Config,
        tokenizer: Any,
        generator: Any,
        sampling: SamplingParams,
        *,
        reward_pool: Any = None,
        past_generator: Any = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.config = config
        self.generator = generator
        self.pool: OpponentPool | None = None
        if config.env.opponent_pool is not None:
            if past_generator is None:
                raise ValueError("env.opponent_pool needs a generator for the past versions")
            self.pool = OpponentPool(config.env.opponent_pool, past_generator, config.train.seed)
        self.manager: EnvManager | SelfPlayManager
        self.evaluation: GreedyEvaluation | SeatMatches
        if config.env.self_play:  # every seat the policy's; measured against fixed players
            self.manager = SelfPlayManager.from_config(
                config, tokenizer, generator, config.env.group_size, sampling
            )
            self.evaluation = SeatMatches(config, tokenizer, generator)
        else:
            self.manager = EnvManager.from_config(
                config,
                tokenizer,
                generator,
                config.env.group_size,
                sampling,
                reward_pool=reward_pool,
            )
            self.evaluation = GreedyEvaluation(
                config, tokenizer, generator, reward_pool=reward_pool
            )
        self.curriculum: Curriculum | None = None
        if config.env.curriculum is not None:
            knob = config.env.curriculum.kwarg
            self.curriculum = Curriculum(config.env.curriculum, start=config.env.kwargs[knob])
        self._log = log
        self._metrics: dict[str, float] = {}

    def rollout(self, step: int, version: int) -> list[Trajectory]:
        """Plays step ``step``'s groups (``version`` is the generator's: it is always current).

        With ``algorithm.dynamic_sampling``, the groups whose returns are all equal are
        replaced by groups of new seeds; the curriculum sees the step's success.
        """
        config = self.config
        seeds = step_seeds(config.train.seed, step, config.env.groups_per_step)
        self.manager.sampling = replace(
            self.manager.sampling, seed=hash((config.train.seed, step)) % 2**31
        )
        past = self.pool.draw(step) if self.pool is not None else None
        against_past: dict[str, Any] = {}
        if self.pool is not None and past is not None:
            against_past = {
                "past_generator": self.pool.generator,
                "past_groups": self.pool.groups(len(seeds)),
            }
        trajectories = played = self.manager.rollout(
            seeds, group_ids=list(range(len(seeds))), **against_past
        )
        pool_metrics = self._record_pool_games(past)
        sampling_metrics: dict[str, float] = {}
        if config.algorithm.dynamic_sampling:
            trajectories, played, sampling_metrics = self._resample_uniform_groups(
                step, trajectories
            )
        if config.generation.offload:  # the GPU to the update; the weight sync wakes it
            self.generator.offload()
        metrics = rollout_metrics(played, "rollout")
        self._metrics = {
            **metrics,
            **self._advance_curriculum(step, metrics["rollout/success"]),
            **sampling_metrics,
            **pool_metrics,
        }
        return trajectories

    def _record_pool_games(self, past: Any) -> dict[str, float]:
        """Gives the pool the policy's results against this step's past version; the
        ``pool/`` metrics."""
        if self.pool is None:
            return {}
        metrics = {"pool/versions": float(len(self.pool.versions))}
        if past is not None:
            assert isinstance(self.manager, SelfPlayManager)
            results = self.manager.last_past_results
            self.pool.record(past, results)
            metrics["pool/opponent_version"] = float(past.version)
            metrics["pool/points_share"] = sum(map(points, results)) / max(len(results), 1)
        return metrics

    def metrics(self) -> dict[str, float]:
        """The last step's ``rollout/`` metrics, dynamic sampling's and the curriculum's."""
        return dict(self._metrics)

    def evaluate(self, version: int) -> dict[str, float]:
        """Greedy episodes on the held-out seeds ``0 .. eval_groups - 1``."""
        return self.evaluation()

    def push_weights(self, state_dict: Any, version: int) -> None:
        """Loads the policy's new weights into the generator (and, every
        ``env.opponent_pool.every`` versions, a copy into the pool)."""
        self.generator.update_weights(state_dict)
        if self.pool is not None:
            self.pool.add(version, state_dict)

    def state_dict(self) -> dict[str, Any]:
        """The curriculum's level and recent success (``None`` without one)."""
        return {"curriculum": self.curriculum.state_dict() if self.curriculum else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Goes on at the curriculum level a checkpoint had reached."""
        if self.curriculum is not None and state.get("curriculum") is not None:
            self.curriculum.load_state_dict(state["curriculum"])
            self._set_curriculum_level(self.curriculum.value)

    def shutdown(self) -> None:
        """Closes the envs of the training episodes and of the evaluation (browsers, sandboxes,
        servers); the generator and the model are the pipeline's."""
        self.manager.close()
        self.evaluation.close()

    def _resample_uniform_groups(
        self, step: int, first: list[Trajectory]
    ) -> tuple[list[Trajectory], list[Trajectory], dict[str, float]]:
        """Dynamic sampling (ROLL, DAPO): drops the groups whose returns are all equal (no
        advantage to learn from) and rolls out new groups, with new seeds, in their place, up
        to ``dynamic_sampling_max_rounds`` extra rounds.

        Returns:
            The trajectories to train on (at most ``groups_per_step`` informative groups; the
            first round's when no group differs, as without dynamic sampling), every
            trajectory played, and the metrics.
        """
        config = self.config
        wanted = config.env.groups_per_step
        played = list(first)
        informative = informative_groups(first)
        rounds, next_id = 0, max(t.group_id for t in first) + 1
        while len(informative) < wanted and rounds < config.algorithm.dynamic_sampling_max_rounds:
            rounds += 1
            missing = wanted - len(informative)
            seeds = step_seeds(config.train.seed, step, missing, resample=rounds)
            more = self.manager.rollout(seeds, group_ids=list(range(next_id, next_id + missing)))
            next_id += missing
            played += more
            informative += informative_groups(more)
        kept = [t for group in informative[:wanted] for t in group]
        groups_played = len({t.group_id for t in played})
        metrics = {
            "train/dynamic_sampling_rounds": float(rounds),
            "train/uniform_groups_dropped": float(groups_played - len(informative)),
            "train/informative_groups": float(min(len(informative), wanted)),
        }
        return (kept or first), played, metrics

    def _advance_curriculum(self, step: int, success: float) -> dict[str, float]:
        """Gives the step's sampled success to the curriculum; when it raises its kwarg, the
        training envs are made again with the new value (from the next step on).

        Returns:
            ``curriculum/<kwarg>``: the value this step's episodes were played with.
        """
        if self.curriculum is None:
            return {}
        played_with = self.curriculum.value
        raised = self.curriculum.observe(success)
        if raised is not None:
            self._set_curriculum_level(raised)
            self._log(f"step {step}: curriculum raised {self.curriculum.kwarg} to {raised}")
        return {f"curriculum/{self.curriculum.kwarg}": float(played_with)}

    def _set_curriculum_level(self, value: int) -> None:
        assert self.curriculum is not None
        self.manager.close()  # its envs were made with the old value
        self.manager.env_kwargs[self.curriculum.kwarg] = value
