"""The single controller: one training step is roll out -> score -> assign credit -> filter ->
update -> sync.

    for step in steps:
        trajectories = rollouts.rollout(step)                        # groups share a seed
        old, ref     = strategy.sequence_logprobs(samples), strategy.reference_logprobs(samples)
        advantages   = assign_credit(trajectories, rewards, algorithm)
        keep         = starpo_s_filter(...) & nonzero_advantage_filter(...)
        for epoch, minibatch: strategy.train_step(minibatch)        # PPO-clipped updates
        rollouts.push_weights(strategy.inference_state_dict())      # weight sync
        metrics; every N steps: evaluation on held-out seeds, an atomic checkpoint

``rollouts`` is a :class:`~trainer.rollout.rollouts.Rollouts`: with ``rollout.mode: local``
a :class:`~trainer.training.local_rollouts.LocalRollouts` (one env manager in this process, in
lockstep with the generator), with ``rollout.mode: ray`` a
:class:`~trainer.rollout.ray_rollouts.RayRollouts` (env manager actors play every episode on
its own against generator replicas, up to ``rollout.async_generation_ratio`` steps ahead of
training).

Seeds and sampling randomness derive from ``(train.seed, step)``, so a resumed local run samples
exactly what an uninterrupted one would have; on Ray, which replica samples what depends on
timing, so a Ray run resumes with the seeds an uninterrupted one would play next but is not
reproduced sample for sample. Ctrl-C finishes the current
step, saves a checkpoint and stops; a second Ctrl-C stops at once.
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from trainer.algorithms import ALGORITHMS, kl_penalty, nonzero_advantage_filter, starpo_s_filter
from trainer.config import Config
from trainer.evaluation.log import EvaluationLog
from trainer.generation.from_config import (
    check_generation_backend,
    generator_for,
    sampling_params,
)
from trainer.models import load_model, load_tokenizer
from trainer.rollout.rollouts import Rollouts
from trainer.rollout.trajectory import Sample, Trajectory
from trainer.strategies import STRATEGIES
from trainer.strategies.batch import TokenBatch
from trainer.strategies.from_config import build_strategy, resolve_device
from trainer.strategies.frozen_layers import check_trainable_layers
from trainer.training.checkpoint import checkpoint_step, latest_checkpoint, save_checkpoint
from trainer.training.credit import assign_credit, samples_of
from trainer.training.local_rollouts import LocalRollouts
from trainer.training.metrics import MetricsLogger
from trainer.training.run_clock import RunClock
from trainer.training.run_view import Phase, PlainRunView, RunView, format_duration
from trainer.training.sft import (
    WARM_START,
    WarmStartState,
    planned_sft_steps,
    supervised_warm_start,
)
from trainer.training.stop_request import RunStopped, StopRequest

if TYPE_CHECKING:
    from trainer.rewards.pool import RewardPool


RL = "RL"


@dataclass
class _Scores:
    """A step's trajectories as the update reads them, one row a sample (a turn's tokens)."""

    sequences: list[list[int]]
    masks: list[torch.Tensor]
    old_logprobs: list[torch.Tensor]
    values: list[torch.Tensor] | None
    ref_logprobs: list[torch.Tensor] | None
    rewards: torch.Tensor  # one return an episode
    owner_of_sample: list[int]  # the episode of each row
    # what each token was sampled among, per row (Sample.choices); None when nothing recorded
    choices: list | None = None
    # the generator's log-probs, with algorithm.off_policy_correction (old_logprobs are then
    # the weights' before the update)
    behaviour_logprobs: list[torch.Tensor] | None = None
    rows_recomputed: int = 0  # the rows a model pass read for their log-probs

    def select(self, rows: list[int]) -> _Scores:
        """The scores of the given rows (``rewards``, one an episode, stay whole)."""

        def pick(values: list | None) -> list | None:
            return None if values is None else [values[row] for row in rows]

        return _Scores(
            pick(self.sequences),
            pick(self.masks),
            pick(self.old_logprobs),
            pick(self.values),
            pick(self.ref_logprobs),
            self.rewards,
            pick(self.owner_of_sample),
            pick(self.choices),
            pick(self.behaviour_logprobs),
            self.rows_recomputed,
        )


def _skipped_text(metrics: dict[str, float]) -> str:
    """Why a step made no update: every episode was left out of the batch."""
    zero = int(metrics.get("train/zero_advantage_episodes", 0))
    dropped = int(metrics.get("train/starpo_s_dropped_episodes", 0))
    if zero and not dropped:
        return f"skipped: all {zero} episodes had zero advantage"
    reasons = [f"{zero} had zero advantage"] if zero else []
    reasons += [f"{dropped} dropped by StarPO-S"] if dropped else []
    return f"skipped: no episode left to train on ({', '.join(reasons) or 'empty batch'})"


def plan_phases(config: Config, *, resume: bool) -> list[Phase]:
    """The run's phases as ``config`` and its run folder say: the warm start unless it finished
    (with the steps it did, on ``--resume``), then RL (from its newest checkpoint on resume).

    The warm start's time limit is ``sft.max_minutes`` (else the whole run's
    ``train.max_minutes``); RL's is set when it begins, from what the budget has left.
    """
    phases = []
    if config.sft.before_rl:
        warm = WarmStartState.of_run(config)
        if not warm.finished:
            done = warm.step if resume else 0
            limit = config.sft.max_minutes or config.train.max_minutes
            phases.append(
                Phase(
                    WARM_START,
                    max(planned_sft_steps(config), done),
                    done=done,
                    time_limit_s=None if limit is None else 60 * limit,
                    elapsed_before_s=warm.run_elapsed_s if resume else 0.0,
                )
            )
    if config.train.steps == 0:  # the warm start is the whole run
        return phases
    newest = latest_checkpoint(Path(config.train.output_dir)) if resume else None
    rl_done = 0 if newest is None else checkpoint_step(newest)
    phases.append(Phase(RL, config.train.steps, done=min(rl_done, config.train.steps)))
    return phases


def run_clock(config: Config, *, resume: bool) -> RunClock:
    """The whole run's clock against ``train.max_minutes``, going on, on ``--resume``, from the
    time the newest checkpoint (RL's, else the warm start's) recorded."""
    before = 0.0
    if resume:
        newest = latest_checkpoint(Path(config.train.output_dir))
        if newest is not None:
            state = torch.load(newest / "trainer_state.pt", weights_only=False)
            before = state.get("run_elapsed_s", 0.0)
        elif config.sft.before_rl:
            before = WarmStartState.of_run(config).run_elapsed_s
    budget = config.train.max_minutes
    return RunClock(None if budget is None else 60 * budget, before)


def plan_text(config: Config, phases: list[Phase]) -> str:
    """What the run will do and for how long, in one line for its start.

    Example:
        >>> from trainer.config import load_config
        >>> config = load_config(None, ["train.max_minutes=60", "sft.before_rl=true",
        ...     "sft.max_minutes=15", "train.eval_every_minutes=5", "train.eval_before=true"])
        >>> text = plan_text(config, plan_phases(config, resume=False))
        >>> text.startswith("Plan: about 60 min: a warm start on oracle episodes for up to 15 min")
        True
        >>> text.endswith("at the start and every 5 min, included in the 60 min.")
        True
    """
    train = config.train
    names = [phase.name for phase in phases]
    if train.max_minutes is not None:
        head = f"Plan: about {train.max_minutes:g} min: "
        rl = f"RL until {train.max_minutes:g} min (or {train.steps} steps)"
    else:
        head = "Plan: "
        rl = f"{train.steps} RL steps"
    parts = []
    if WARM_START in names:
        limit = config.sft.max_minutes or train.max_minutes
        parts.append(
            "a warm start on oracle episodes "
            + (f"for up to {limit:g} min" if limit is not None else "until its episodes run out")
        )
    if RL in names:
        parts.append(rl)
    elif train.steps == 0:
        parts.append("no RL (train.steps=0)")
    text = head + ", then ".join(parts)
    when = []
    if train.eval_before:
        when.append("at the start")
    if train.eval_every_minutes is not None:
        when.append(f"every {train.eval_every_minutes:g} min")
    if train.eval_every:
        when.append(f"every {train.eval_every} RL steps")
    if when:
        text += f"; a greedy evaluation of {train.eval_groups} held-out episodes " + " and ".join(
            when
        )
        if train.max_minutes is not None:
            text += f", included in the {train.max_minutes:g} min"
    return text + "."


class Pipeline:
    """Trains a policy in one env with one algorithm, as ``config`` says.

    Args:
        config: the run's configuration.
        resume: continue from the newest complete checkpoint in ``train.output_dir`` (and an
            unfinished warm start from its own).
        log: where progress lines go when no ``view`` is given (``print`` by default; ``None``
            for silence).
        view: shows the run's progress (default: plain lines through ``log``).
        stop: the run's Ctrl-C handling (default: one installed while it trains).
        on_evaluation: called with the step and the ``eval/`` metrics after each RL evaluation
            (``roll-agent train`` records them in the leaderboard's store).
        clock: the whole run's clock (default: :func:`run_clock` of ``config``).

    Raises:
        RunStopped: Ctrl-C stopped the warm start (it saved its checkpoint first).
    """

    def __init__(
        self,
        config: Config,
        *,
        resume: bool = False,
        log: Callable[[str], None] | None = print,
        view: RunView | None = None,
        stop: StopRequest | None = None,
        on_evaluation: Callable[[int, dict[str, float]], None] | None = None,
        clock: RunClock | None = None,
    ):
        self.config = config
        self.on_evaluation = on_evaluation
        self.run_dir = Path(config.train.output_dir)
        self.clock = clock or run_clock(config, resume=resume)
        self.view = view or PlainRunView(
            plan_phases(config, resume=resume),
            write=log or (lambda message: None),
            run_clock=self.clock,
        )
        self._log = self.view.message
        self.stop = stop or StopRequest(self._log)
        self.evaluations: list[tuple[int, float]] = []  # (RL step, eval/success)
        self.evaluation_log = EvaluationLog(self.run_dir)
        if not resume:  # this run's curve only (the CLI refuses a folder holding another run)
            self.evaluation_log.truncate(WARM_START, -1)
        self.stopped_early = False
        self.out_of_time = False  # ended by train.max_minutes, not by train.steps
        self._closed = False
        torch.manual_seed(config.train.seed)
        random.seed(config.train.seed)
        np.random.seed(config.train.seed % 2**32)

        self.reward_pool = None
        self._started_ray = False
        if config.rewards.pool:  # before any model loads: a wrong env or judge fails at once
            self.reward_pool = self._start_reward_pool()
        device = resolve_device(config.train.device)
        check_generation_backend(config, device)  # before the warm start's minutes of SFT
        check_trainable_layers(config.model.name, config.model.trainable_layers)
        model_name = self._warm_started_model(resume) if config.sft.before_rl else config.model.name
        self._log(f"Loading model {model_name}...")
        # a strategy's train workers load their own policy
        distributed = not STRATEGIES[config.train.strategy].in_process
        local = config.rollout.mode == "local"  # the generator in this process needs one
        policy = None
        if distributed and not local:
            self.tokenizer = load_tokenizer(model_name)
        else:
            policy, self.tokenizer = load_model(model_name, seed=config.train.seed)
            policy.to(device)
        # the generator's own copy, taken before the strategy wraps the policy (LoRA)
        generator_model = None
        if local:
            generator_model = policy if distributed else copy.deepcopy(policy)
        self.sampling = sampling_params(config, self.tokenizer)
        self.strategy = build_strategy(
            config,
            policy,
            self.tokenizer.pad_token_id,
            model_name=model_name,
            vocabulary=(
                self.sampling.allowed_token_ids if config.algorithm.score_actions_only else None
            ),
        )
        if config.optim.moments_from is not None:
            self.strategy.load_optimizer_moments(Path(config.optim.moments_from))
        self.rollouts: Rollouts
        if config.rollout.mode == "ray":
            from trainer.rollout.ray_rollouts import RayRollouts

            self._log("Starting env manager and generator actors on Ray...")
            self.rollouts = RayRollouts(
                config, model_name, self.tokenizer, self.sampling, reward_pool=self.reward_pool
            )
            self.rollouts.push_weights(self.strategy.inference_state_dict(), version=0)
        elif config.agent.function is not None:  # an agent program, through the gateway
            from trainer.agents.agent_rollouts import AgentRollouts

            self.rollouts = AgentRollouts(
                config, generator_for(config, generator_model, self.tokenizer, device)
            )
        else:  # the generator starts from a copy of the policy: its weights are current
            past_generator = None
            if config.env.opponent_pool is not None:  # a copy of its own for past versions
                past_model = copy.deepcopy(generator_model)
                past_generator = generator_for(config, past_model, self.tokenizer, device)
            self.rollouts = LocalRollouts(
                config,
                self.tokenizer,
                generator_for(config, generator_model, self.tokenizer, device),
                self.sampling,
                reward_pool=self.reward_pool,
                past_generator=past_generator,
                log=self._log,
            )
        self.step = 0
        newest = latest_checkpoint(self.run_dir) if resume else None
        self.metrics = MetricsLogger(
            self.run_dir,
            config.train.loggers,
            config.model_dump(),
            resume_after=(0 if newest is None else checkpoint_step(newest)) if resume else None,
        )
        if resume:
            self._resume()

    def _start_reward_pool(self) -> RewardPool:
        """The reward workers ``config.rewards`` describes (Ray started here if it is not)."""
        import ray

        from trainer.rewards.pool import RewardPool
        from trainer.rollout.env_manager import check_defers_rewards

        settings = self.config.rewards
        check_defers_rewards(self.config.env.id)
        if not ray.is_initialized():  # the Ray rollouts then join this cluster
            ray.init(
                address=self.config.rollout.ray_address, include_dashboard=False,
                log_to_driver=False,
            )  # fmt: skip
            self._started_ray = True
        self._log(f"Starting {settings.min_workers} reward worker(s) on Ray...")
        return RewardPool(
            min_workers=settings.min_workers,
            max_workers=settings.max_workers,
            num_cpus=settings.worker_cpus,
            num_gpus=settings.worker_gpus,
            resources=settings.worker_resources,
            rule_deadline_s=settings.rule_deadline_s,
            judge=settings.judge,
            judge_workers=settings.judge_workers,
            judge_num_cpus=settings.judge_worker_cpus,
            judge_num_gpus=settings.judge_worker_gpus,
            judge_timeout_s=settings.judge_timeout_s,
            sandbox_workers=settings.sandbox_workers,
            sandbox_num_cpus=settings.sandbox_worker_cpus,
            sandbox_deadline_s=settings.sandbox_deadline_s,
        )

    def _warm_started_model(self, resume: bool) -> str:
        """The model folder of the run's supervised warm start, made (or, on ``--resume``,
        finished) first if it is not done.

        It lives in ``<run>/sft`` and is found again on ``--resume``, so a resumed run keeps the
        same starting weights (its LoRA adapters are trained on top of them).
        """
        state = WarmStartState.of_run(self.config)
        if not state.finished:
            sft = self.config.sft
            limit = sft.max_minutes or self.config.train.max_minutes
            self._log(
                "Supervised warm start on oracle episodes"
                + (f" for up to {limit:g} min..." if limit else f" ({sft.episodes})...")
            )
            if resume:
                self.evaluation_log.truncate(WARM_START, state.step if state.step else -1)
            with self.stop.installed():
                state = supervised_warm_start(
                    self.config,
                    view=self.view,
                    resume=resume,
                    stop=self.stop,
                    clock=self.clock,
                    on_evaluation=lambda step, metrics, seconds: self._record_evaluation(
                        WARM_START, step, metrics, seconds
                    ),
                )
            if not state.finished:
                assert state.checkpoint is not None
                raise RunStopped(state.checkpoint, WARM_START, state.step)
        assert state.checkpoint is not None
        return str(state.checkpoint / "model")

    # ------------------------------------------------------------------ one step
    def train_step(self) -> dict[str, float]:
        """Runs step ``self.step + 1`` and returns its metrics: roll out, score, assign credit,
        filter, update, sync the weights."""
        algorithm = self.config.algorithm
        step = self.step + 1
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        played = self.rollouts.rollout(step, version=self.step)
        timings["time/rollout"] = time.perf_counter() - clock
        # an episode the reward workers could not score has no return to learn from
        trajectories = [t for t in played if t.unscored is None]
        unscored = {"train/unscored_episodes": float(len(played) - len(trajectories))}
        if not trajectories:
            self.step = step
            if played:
                reason = played[0].unscored
                self._log(f"step {step}: every episode was unscored ({reason}); no update")
            else:  # an agent program's episodes that all failed (rollout/agent_* says how)
                self._log(f"step {step}: no episode to train on; no update")
            return {**self.rollouts.metrics(), **timings, **unscored}

        samples = samples_of(trajectories)
        masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples]
        owner_of_sample = [i for i, t in enumerate(trajectories) for _ in t.samples]
        clock = time.perf_counter()
        if self._credit_reads_the_model():
            # the critic's values or the KL-charged returns decide the advantages: every row
            # is read before the filters can run
            scores = self._score(trajectories, rows=range(len(samples)))
            rewards, values = scores.rewards, scores.values
        else:  # the filters run on the returns alone; only the rows they keep are read
            scores, values = None, None
            rewards = torch.tensor([t.episode_return for t in trajectories], dtype=torch.float32)
        credit = assign_credit(trajectories, rewards, algorithm, values)
        keep, filter_metrics = self._keep(
            trajectories, rewards, masks, owner_of_sample, credit.advantages
        )
        rows = [row for row, owner in enumerate(owner_of_sample) if keep[owner]]
        scores = self._score(trajectories, rows) if scores is None else scores.select(rows)
        timings["time/logprobs"] = time.perf_counter() - clock
        batch = TokenBatch(
            token_ids=scores.sequences,
            loss_mask=scores.masks,
            advantages=[credit.advantages[row] for row in rows],
            old_logprobs=scores.old_logprobs,
            ref_logprobs=scores.ref_logprobs,
            old_values=scores.values,
            returns=None if credit.returns is None else [credit.returns[row] for row in rows],
            choices=scores.choices,
            behaviour_logprobs=scores.behaviour_logprobs,
        )
        read = {"train/rows_recomputed": float(scores.rows_recomputed)}

        clock = time.perf_counter()
        update_metrics = self._update(batch, step)
        timings["time/update"] = time.perf_counter() - clock
        clock = time.perf_counter()
        self._sync_weights(version=step)
        timings["time/weight_sync"] = time.perf_counter() - clock
        self.step = step
        trained = torch.cat([a[m > 0] for a, m in zip(credit.advantages, masks, strict=True)])
        return {
            **self.rollouts.metrics(),
            **filter_metrics,
            **unscored,
            **update_metrics,
            **timings,
            **read,
            "train/kept_episodes": float(keep.float().mean()),
            "train/advantage_abs_mean": float(trained.abs().mean()),
        }

    def _credit_reads_the_model(self) -> bool:
        """Whether the advantages need a model pass: the critic's values (PPO), or the
        reference's log-probs charged to the returns (``kl_mode=reward``)."""
        algorithm = self.config.algorithm
        return ALGORITHMS[algorithm.name].needs_critic or (
            algorithm.kl_coef > 0 and algorithm.kl_mode == "reward"
        )

    def _score(self, trajectories: list[Trajectory], rows: Sequence[int]) -> _Scores:
        """The rows ``rows`` of the trajectories' samples with the log-probs they were sampled
        with (recomputed, or the generator's), the critic's values, the reference's log-probs,
        and the episodes' returns (less the KL to the reference with ``kl_mode=reward``).

        Under an off-policy correction the log-probs before the update are those of the
        weights the generator numbers ``self.step``: a row whose every sampled token those
        weights drew already has them (its behaviour log-probs), so only the rows with an
        older token are read again.
        """
        algorithm = self.config.algorithm
        every_sample = samples_of(trajectories)
        samples = [every_sample[row] for row in rows]
        sequences = [s.token_ids for s in samples]
        masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples]
        choices = [s.choices for s in samples]
        needs_critic = ALGORITHMS[algorithm.name].needs_critic
        generator_logprobs = [torch.tensor(s.logprobs, dtype=torch.float32) for s in samples]
        if algorithm.old_logprobs == "generator" and not needs_critic:
            to_read: list[int] = []
        elif algorithm.off_policy_correction != "none" and not needs_critic:
            to_read = [i for i, s in enumerate(samples) if not self._drawn_by_current(s)]
        else:  # the critic's values come from the same forward pass
            to_read = list(range(len(samples)))
        old_logprobs = list(generator_logprobs)
        values = None
        if to_read:
            read, values = self.strategy.sequence_logprobs(
                [sequences[i] for i in to_read],
                [masks[i] for i in to_read],
                with_values=needs_critic,
                **self._among([choices[i] for i in to_read]),
            )
            for i, logprobs in zip(to_read, read, strict=True):
                old_logprobs[i] = logprobs
        behaviour_logprobs = None
        if algorithm.off_policy_correction != "none":
            behaviour_logprobs = generator_logprobs
        ref_logprobs = None
        if algorithm.kl_coef > 0 and samples:
            ref_logprobs = self.strategy.reference_logprobs(
                sequences, masks, **self._among(choices)
            )
        owner_of_sample = [i for i, t in enumerate(trajectories) for _ in t.samples]
        owner_of_sample = [owner_of_sample[row] for row in rows]
        rewards = torch.tensor([t.episode_return for t in trajectories], dtype=torch.float32)
        if ref_logprobs is not None and algorithm.kl_mode == "reward":
            # KL(pi || ref) summed over each episode's sampled tokens, charged to its return
            for i, owner in enumerate(owner_of_sample):
                kl = kl_penalty(old_logprobs[i], ref_logprobs[i], algorithm.kl_estimator)
                rewards[owner] -= algorithm.kl_coef * float((kl * masks[i]).sum())
        return _Scores(
            sequences,
            masks,
            old_logprobs,
            values,
            ref_logprobs,
            rewards,
            owner_of_sample,
            self._among(choices).get("choices"),
            behaviour_logprobs,
            rows_recomputed=len(to_read),
        )

    @staticmethod
    def _among(choices: list) -> dict[str, list]:
        """The ``choices`` keyword of a scoring call, where some token was sampled among few."""
        return {"choices": choices} if any(c is not None for c in choices) else {}

    def _drawn_by_current(self, sample: Sample) -> bool:
        """Whether the weights the update starts from sampled every trained token of
        ``sample``."""
        versions = sample.weight_versions
        if versions is None:
            return False
        drawn = [v for v, m in zip(versions, sample.loss_mask, strict=True) if m]
        return all(v == self.step for v in drawn)

    def _keep(
        self,
        trajectories: list[Trajectory],
        rewards: torch.Tensor,
        masks: list[torch.Tensor],
        owner_of_sample: list[int],
        advantages: list[torch.Tensor],
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Which episodes the update trains on: StarPO-S's most varied groups
        (``algorithm.starpo_s_keep``), without the episodes whose advantage is 0 everywhere
        (``algorithm.skip_zero_advantage``); and how many each filter dropped."""
        algorithm = self.config.algorithm
        keep = torch.ones(len(trajectories), dtype=torch.bool)
        if algorithm.starpo_s_keep is not None:
            group_ids = torch.tensor([t.group_id for t in trajectories])
            keep = starpo_s_filter(rewards, group_ids, keep_fraction=algorithm.starpo_s_keep)
        kept_before_zero_filter = int(keep.sum())
        if algorithm.skip_zero_advantage:
            keep &= nonzero_advantage_filter(
                advantages, masks, owner_of_sample, num_trajectories=len(trajectories)
            )
        return keep, {
            "train/starpo_s_dropped_episodes": float(len(trajectories) - kept_before_zero_filter),
            "train/zero_advantage_episodes": float(kept_before_zero_filter - int(keep.sum())),
        }

    def _update(self, batch: TokenBatch, step: int) -> dict[str, float]:
        """``algorithm.ppo_epochs`` passes over the batch in ``algorithm.minibatches`` shuffled
        parts, an optimizer step each; the update metrics averaged over them."""
        algorithm = self.config.algorithm
        totals: dict[str, float] = {}
        order_rng = random.Random(f"{self.config.train.seed}-{step}-minibatches")
        updates = 0
        for _ in range(algorithm.ppo_epochs):
            order = list(range(len(batch)))
            order_rng.shuffle(order)
            for part in np.array_split(np.array(order), algorithm.minibatches):
                if len(part) == 0:
                    continue
                for name, value in self.strategy.train_step(batch.select(part.tolist())).items():
                    totals[name] = totals.get(name, 0.0) + value
                updates += 1
        return {name: total / max(updates, 1) for name, total in totals.items()}

    def evaluate(self) -> dict[str, float]:
        """Greedy episodes on the held-out seeds ``0 .. eval_groups - 1``."""
        return self.rollouts.evaluate(version=self.step)

    def _sync_weights(self, version: int) -> None:
        self.rollouts.push_weights(self.strategy.inference_state_dict(), version)

    def close(self) -> None:
        """Closes the rollouts (a local run's envs; a Ray run's actors), the train workers of a
        distributed strategy and the reward workers."""
        if not self._closed:
            self.rollouts.shutdown()
            self._closed = True
        self.strategy.close()
        if self.reward_pool is not None:
            self.reward_pool.close()
            self.reward_pool = None
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    # ------------------------------------------------------------------ the loop
    def run(self) -> dict[str, float]:
        """Trains until ``train.steps``, the whole run's ``train.max_minutes`` or Ctrl-C (then
        saves); returns the last step's metrics.

        Evaluations: the starting policy first (``train.eval_before``), every
        ``train.eval_every`` steps and ``train.eval_every_minutes`` minutes, and a last one
        when the run ends by its steps or its time (if it evaluates at all).
        """
        config = self.config.train
        last: dict[str, float] = {}
        if config.steps == 0 and latest_checkpoint(self.run_dir) is None:
            return self._end_without_rl()
        if self.step >= config.steps:
            self._log(f"Nothing to do: the run is at step {self.step} of {config.steps}.")
            self.close()
            return last
        phase = self.view.phase(RL)
        left = self.clock.left_s()
        self.view.begin(RL, done=self.step)
        if left is not None:  # RL's share: what the whole run's budget has left
            phase.time_limit_s = phase.elapsed_s(self.view.clock()) + left
        every_s = None if config.eval_every_minutes is None else 60 * config.eval_every_minutes
        evaluates = bool(config.eval_before or config.eval_every or every_s)
        try:
            with self.stop.installed():
                if config.eval_before and self.step == 0:
                    self.metrics.log(0, self._evaluate_and_record())
                next_eval_s = None if every_s is None else self.clock.elapsed_s() + every_s
                while self.step < config.steps:
                    started = time.perf_counter()
                    last = self.train_step()
                    out_of_time = self.clock.over()
                    ends = out_of_time or self.step == config.steps
                    due = bool(config.eval_every) and self.step % config.eval_every == 0
                    due_by_time = next_eval_s is not None and self.clock.elapsed_s() >= next_eval_s
                    if due or due_by_time or (ends and evaluates):
                        last.update(self._evaluate_and_record())
                        if every_s is not None:
                            next_eval_s = self.clock.elapsed_s() + every_s
                    last["time/step"] = time.perf_counter() - started
                    self.metrics.log(self.step, last)
                    skipped = None if "loss" in last else _skipped_text(last)
                    self.view.step(self.step, last, skipped=skipped)
                    save_due = config.checkpoint_every and self.step % config.checkpoint_every == 0
                    if save_due or self.stop.requested or ends:
                        path = self.save()
                        self._log(f"Saved {path}")
                    if out_of_time:
                        self.out_of_time = True
                        self._log(
                            f"Stopped at step {self.step}: the run's "
                            f"{config.max_minutes:g} minutes (train.max_minutes) have passed."
                        )
                        break
                    if self.stop.requested:
                        self.stopped_early = True
                        self._log(f"Stopped at step {self.step}; continue with --resume.")
                        break
        finally:
            self.metrics.close()
            self.close()
        return last

    def _end_without_rl(self) -> dict[str, float]:
        """``train.steps=0``: the warm start was the whole run. Its policy gets the run's last
        evaluation (if the run evaluates) and the run's checkpoint (step 0), so evaluating,
        serving and the summary work as after RL."""
        config = self.config.train
        last: dict[str, float] = {}
        try:
            if config.eval_before or config.eval_every or config.eval_every_minutes is not None:
                last = self._evaluate_and_record(
                    WARM_START, WarmStartState.of_run(self.config).step
                )
                self.metrics.log(0, last)
            self._log(f"Saved {self.save()}")
        finally:
            self.metrics.close()
            self.close()
        return last

    def _evaluate_and_record(self, phase: str = RL, step: int | None = None) -> dict[str, float]:
        """Evaluates the policy as of ``phase``'s ``step`` (default: RL's current step)."""
        step = self.step if step is None else step
        started = time.perf_counter()
        evaluation = self.evaluate()
        self._record_evaluation(phase, step, evaluation, time.perf_counter() - started)
        self.evaluations.append((step, evaluation["eval/success"]))
        if self.on_evaluation is not None:
            self.on_evaluation(step, evaluation)
        return evaluation

    def _record_evaluation(
        self, phase: str, step: int, metrics: dict[str, float], seconds: float
    ) -> None:
        """An evaluation of either phase: into ``evaluations.jsonl`` (the learning curve) and
        the view; the first also says what evaluating costs against the run's budget."""
        episodes = self.config.train.eval_groups
        minutes = (self.clock.elapsed_s() - seconds) / 60
        first = not self.evaluation_log.points()
        self.evaluation_log.add(phase, step, minutes, metrics, episodes)
        self.view.evaluated(phase, step, metrics["eval/success"], episodes, seconds)
        if first:
            self._log(self._evaluation_cost_text(seconds))

    def _evaluation_cost_text(self, seconds: float) -> str:
        """The first evaluation's cost, and what the planned ones add up to."""
        train = self.config.train
        text = f"An evaluation ({train.eval_groups} episodes) took {format_duration(seconds)}"
        if train.max_minutes is not None and train.eval_every_minutes is not None:
            count = int(train.max_minutes // train.eval_every_minutes) + 1
            total = format_duration(count * seconds)
            return text + f": about {count} in the run's {train.max_minutes:g} min, {total} of it."
        return text + "."

    # ------------------------------------------------------------------ checkpoints
    def save(self) -> Path:
        """Writes ``checkpoints/step-N`` atomically (model folder, optimizer, RNG, step)."""

        def write(folder: Path) -> None:
            self.strategy.save(folder)
            self.tokenizer.save_pretrained(folder / "model")
            torch.save(
                {
                    "step": self.step,
                    "torch_rng": torch.get_rng_state(),
                    "python_rng": random.getstate(),
                    "numpy_rng": np.random.get_state(),
                    **self.rollouts.state_dict(),
                    "run_elapsed_s": self.clock.elapsed_s(),
                },
                folder / "trainer_state.pt",
            )
            (folder / "config.json").write_text(json.dumps(self.config.model_dump(), indent=2))

        return save_checkpoint(self.run_dir, self.step, write)

    def _resume(self) -> None:
        folder = latest_checkpoint(self.run_dir)
        if folder is None:
            self._log(f"No complete checkpoint in {self.run_dir}; starting from step 0.")
            self.evaluation_log.truncate(RL, -1)
            return
        self.strategy.load(folder)
        state = torch.load(folder / "trainer_state.pt", weights_only=False)
        torch.set_rng_state(state["torch_rng"])
        random.setstate(state["python_rng"])
        np.random.set_state(state["numpy_rng"])
        self.rollouts.load_state_dict(state)
        self.step = checkpoint_step(folder)
        self._sync_weights(version=self.step)
        self.evaluation_log.truncate(RL, self.step)
        self._log(f"Resumed from {folder} at step {self.step}.")
