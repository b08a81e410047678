"""Supervised warm start: fine-tune on the env family's oracle episodes, in RL's exact prompts.

The oracle plays through the same ``EnvManager`` RL uses, so every prompt, chat template and
context mode is identical; its replies are tokenised and closed with the end-of-turn token, and
the model learns them by next-token cross-entropy on the reply tokens only.

Episodes are played as training needs them (``sft.batch_sequences`` per step, fresh seeds), so a
run limited by time rather than by ``sft.episodes`` (``OracleSFT.train(max_seconds=...)``) never
waits on data it will not use. With ``sft.epochs > 1`` the first epoch's episodes are replayed in
a new order.

The warm start is a phase of the run like RL: it writes a checkpoint every
``sft.checkpoint_minutes`` and when Ctrl-C stops it (``sft_state.json`` says how far it got and
whether it finished), and ``roll-agent train --resume`` continues it where it stopped, then goes
on to RL. Only the newest warm-start checkpoint is kept.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from rollenv.policies import oracle_for
from rollenv.seat_policies import RandomSeatPolicy, SolverPolicy
from trainer.config import Config
from trainer.evaluation.held_out import GreedyEvaluation
from trainer.evaluation.seat_matches import SeatMatches
from trainer.models import load_model, load_tokenizer
from trainer.rollout.env_manager import EnvManager
from trainer.rollout.seeds import step_seeds
from trainer.rollout.self_play import SelfPlayManager
from trainer.rollout.trajectory import Sample, Trajectory
from trainer.strategies import STRATEGIES
from trainer.strategies.batch import TokenBatch
from trainer.strategies.from_config import build_strategy, resolve_device
from trainer.strategies.frozen_layers import check_trainable_layers
from trainer.training.checkpoint import checkpoints_dir, latest_checkpoint, save_checkpoint
from trainer.training.credit import samples_of
from trainer.training.metrics import MetricsLogger
from trainer.training.run_clock import RunClock
from trainer.training.run_view import Phase, PlainRunView, RunView
from trainer.training.stop_request import StopRequest

WARM_START = "warm start"
STATE_FILE = "sft_state.json"


def sft_dir(config: Config) -> Path:
    """Where a run's supervised warm start lives: ``<train.output_dir>/sft``."""
    return Path(config.train.output_dir) / "sft"


@dataclass(frozen=True)
class WarmStartState:
    """How far a warm start got, as its newest checkpoint says.

    Attributes:
        checkpoint: that checkpoint (``None``: no warm start yet).
        step: its steps done.
        finished: True when it ran to the end (its ``model/`` is what RL starts from).
        elapsed_s: seconds it has trained, over every session.
        run_elapsed_s: the whole run's clock at that checkpoint (its evaluations included).
    """

    checkpoint: Path | None = None
    step: int = 0
    finished: bool = False
    elapsed_s: float = 0.0
    run_elapsed_s: float = 0.0

    @classmethod
    def of_run(cls, config: Config) -> WarmStartState:
        """The state of the warm start in ``config``'s run folder."""
        folder = latest_checkpoint(sft_dir(config))
        if folder is None:
            return cls()
        state = json.loads((folder / STATE_FILE).read_text())
        # checkpoints written before warm starts could stop half-way were all finished ones
        elapsed = state.get("elapsed_s", 0.0)
        return cls(
            folder,
            state["step"],
            state.get("finished", True),
            elapsed,
            state.get("run_elapsed_s", elapsed),
        )


def planned_sft_steps(config: Config) -> int:
    """The steps of a warm start that runs to the end: a step a ``sft.batch_sequences`` episodes
    in the first epoch, as many again each later epoch (replayed replies: an estimate until the
    first epoch ends)."""
    sft = config.sft
    return math.ceil(sft.episodes / sft.batch_sequences) * sft.epochs


class OracleSFT:
    """Supervised fine-tuning of ``config.model`` on oracle episodes of ``config.env``.

    Args:
        config: the run's configuration (``sft`` section: episodes, epochs, lr, batch).
        log: where lines go when no ``view`` is given.
        metrics_dir: where its metrics are written (default ``<run>/sft``).
        resume_from: a checkpoint :meth:`save` wrote: its weights and optimizer state are
            loaded and training goes on with the batches after those it had trained on.
        view: shows its progress (default: plain lines through ``log``).
        clock: the whole run's clock, whose reading each checkpoint records (default: one
            started now, or on resume where the checkpoint's reading left it).
    """

    def __init__(
        self,
        config: Config,
        *,
        log: Callable[[str], None] = print,
        metrics_dir: Path | None = None,
        resume_from: Path | None = None,
        view: RunView | None = None,
        clock: RunClock | None = None,
    ) -> None:
        self.config = config
        self.view = view or PlainRunView([Phase(WARM_START, planned_sft_steps(config))], write=log)
        self.log = self.view.message
        torch.manual_seed(config.train.seed)
        check_trainable_layers(config.model.name, config.model.trainable_layers)
        self.log(f"Loading model {config.model.name}...")
        if STRATEGIES[config.train.strategy].in_process:
            model, self.tokenizer = load_model(config.model.name, seed=config.train.seed)
            model.to(resolve_device(config.train.device))
        else:  # the train workers load their own copies
            model, self.tokenizer = None, load_tokenizer(config.model.name)
        self.strategy = build_strategy(config, model, self.tokenizer.pad_token_id, lr=config.sft.lr)
        # no generator: the oracle (a game's solver, in self-play) writes every reply
        self.manager: EnvManager | SelfPlayManager
        if config.env.self_play:
            self.manager = SelfPlayManager.from_config(config, self.tokenizer, None, 1)
            self._oracle: Any = SolverPolicy(seed=config.train.seed)
            self._against_random = self._seats_against_random(config)
        else:
            self.manager = EnvManager.from_config(config, self.tokenizer, None, group_size=1)
            self._oracle = oracle_for
            self._against_random = []
        state = None
        if resume_from is not None:
            state = json.loads((Path(resume_from) / STATE_FILE).read_text())
        self.metrics = MetricsLogger(
            metrics_dir or sft_dir(config),
            config.train.loggers,
            config.model_dump(),
            resume_after=None if state is None else state["step"],
        )
        self.step = 0
        self.episodes_seen = 0
        self.elapsed_s = 0.0  # training time over every session
        self.finished = False
        self.total_steps = planned_sft_steps(config)
        self.clock = clock or RunClock()  # the whole run's, saved with each checkpoint
        self._last_save = time.perf_counter()
        if resume_from is not None and state is not None:
            self.strategy.load(resume_from)
            self.step, self.episodes_seen = state["step"], state["episodes_seen"]
            self.elapsed_s = state.get("elapsed_s", 0.0)
            if clock is None:
                self.clock.before_s = state.get("run_elapsed_s", self.elapsed_s)
            torch.set_rng_state(torch.load(Path(resume_from) / "sft_rng.pt"))
            self.log(f"Resumed the warm start from {resume_from} at step {self.step}.")
        self._batches = self._batch_stream(skip=self.step)

    def _seats_against_random(self, config: Config) -> list[SelfPlayManager]:
        """With ``sft.random_opponent_share``: a manager per seat, the other seats random."""
        if not config.sft.random_opponent_share:
            return []
        agents = self.manager.agents
        return [
            SelfPlayManager.from_config(
                config,
                self.tokenizer,
                None,
                1,
                opponents={
                    other: RandomSeatPolicy(seed=config.train.seed + index)
                    for index, other in enumerate(agents)
                    if other != agent
                },
            )
            for agent in agents
        ]

    def _oracle_games(self, start: int, seeds: list[int]) -> list[Trajectory]:
        """The oracle's episodes of ``seeds`` (episodes ``start, start + 1, ...`` of the warm
        start). In self-play with ``sft.random_opponent_share``, evenly spread games of them
        seat random players in every seat but one, each seat in turn."""
        if not self._against_random:
            return self.manager.rollout(seeds, policy=self._oracle)
        share = self.config.sft.random_opponent_share
        solver_only: list[int] = []
        against_random: dict[int, list[int]] = {}
        for index, seed in enumerate(seeds, start):
            count = math.floor((index + 1) * share)
            if count > math.floor(index * share):  # the count-th game against random players
                seat = count % len(self._against_random)
                against_random.setdefault(seat, []).append(seed)
            else:
                solver_only.append(seed)
        played = self.manager.rollout(solver_only, policy=self._oracle) if solver_only else []
        for seat, seat_seeds in sorted(against_random.items()):
            played += self._against_random[seat].rollout(seat_seeds, policy=self._oracle)
        return played

    def _batch_stream(self, skip: int) -> Iterator[tuple[int, list[Sample]]]:
        """The batches of every epoch, the first ``skip`` left out (trained on before a resume).

        The first epoch's episodes are played only where needed: for the batches to train on,
        and for every batch when later epochs replay them.
        """
        sft = self.config.sft
        rng = random.Random(self.config.train.seed)
        seeds = step_seeds(self.config.train.seed, 0, sft.episodes)
        kept: list[Sample] = []
        index = 0
        for start in range(0, len(seeds), sft.batch_sequences):
            index += 1
            chunk = seeds[start : start + sft.batch_sequences]
            self.episodes_seen = start + len(chunk)
            if index <= skip and sft.epochs == 1:
                continue
            samples = samples_of(self._oracle_games(start, chunk))
            if sft.epochs > 1:
                kept += samples
            if index > skip:
                yield 0, samples
        first_epoch_steps = index
        per_epoch = math.ceil(len(kept) / sft.batch_sequences)
        self.total_steps = first_epoch_steps + per_epoch * (sft.epochs - 1)
        for epoch in range(1, sft.epochs):
            order = list(range(len(kept)))
            rng.shuffle(order)
            for start in range(0, len(order), sft.batch_sequences):
                index += 1
                if index > skip:
                    yield epoch, [kept[i] for i in order[start : start + sft.batch_sequences]]

    def train(
        self,
        *,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        stop: StopRequest | None = None,
        checkpoint_to: Path | None = None,
    ) -> dict[str, float]:
        """Trains until the episodes and epochs run out (then ``finished`` is True), ``max_steps``
        more steps are done, ``max_seconds`` more seconds have passed (checked between steps), or
        ``stop`` is requested; returns the last step's metrics. It can be called again to go on
        where it stopped.

        With ``checkpoint_to``, a checkpoint is written there every ``sft.checkpoint_minutes``.
        """
        if self.view.current is None or self.view.current.name != WARM_START:
            # the warm start comes first: its time is the run's (model loading included), the
            # clock its time limit is checked against
            self.view.begin(WARM_START, done=self.step, elapsed_before_s=self.clock.elapsed_s())
        phase = self.view.phase(WARM_START)
        if max_seconds is not None and phase.time_limit_s is None:
            # a phase with no limit of its own, ended by its caller's clock: the bar shows the
            # time, not the steps it will never reach (a run's warm start keeps its own limit,
            # though each call stops at the next evaluation)
            phase.time_limit_s = phase.elapsed_s(self.view.clock()) + max_seconds
        steps = 0
        result: dict[str, float] = {}
        every_s = 60 * self.config.sft.checkpoint_minutes
        started = time.perf_counter()
        while max_steps is None or steps < max_steps:
            if max_seconds is not None and time.perf_counter() - started >= max_seconds:
                break
            if stop is not None and stop.requested:
                break
            clock = time.perf_counter()
            try:
                epoch, rows = next(self._batches)
            except StopIteration:
                self.finished = True
                break
            batch = TokenBatch(
                token_ids=[s.token_ids for s in rows],
                loss_mask=[torch.tensor(s.loss_mask, dtype=torch.float32) for s in rows],
                advantages=[torch.zeros(len(s.token_ids)) for s in rows],
                old_logprobs=[torch.zeros(len(s.token_ids)) for s in rows],
            )
            result = self.strategy.supervised_step(batch)
            self.step += 1
            steps += 1
            self.elapsed_s += time.perf_counter() - clock
            self.metrics.log(self.step, {**result, "sft/epoch": epoch})
            self.view.phase(WARM_START).total = max(self.total_steps, self.step)
            self.view.step(self.step, result)
            if checkpoint_to is not None and time.perf_counter() - self._last_save >= every_s:
                self.log(f"Saved {self.save(checkpoint_to)}")
        return result

    def save(self, run_dir: Path) -> Path:
        """Writes an atomic checkpoint (``model/`` is a full Hugging Face model, LoRA merged) and
        removes the older ones of ``run_dir``."""

        def write(folder: Path) -> None:
            self.strategy.save(folder)
            self.tokenizer.save_pretrained(folder / "model")
            torch.save(torch.get_rng_state(), folder / "sft_rng.pt")
            state = {
                "step": self.step,
                "episodes_seen": self.episodes_seen,
                "elapsed_s": self.elapsed_s,
                "finished": self.finished,
                "run_elapsed_s": self.clock.elapsed_s(),
            }
            (folder / STATE_FILE).write_text(json.dumps(state))

        self._last_save = time.perf_counter()
        saved = save_checkpoint(run_dir, self.step, write)
        for older in checkpoints_dir(run_dir).glob("step-*"):
            if older != saved:
                shutil.rmtree(older, ignore_errors=True)
        return saved

    def close(self) -> None:
        """Closes the metrics and the strategy (a distributed one's train workers end)."""
        self.metrics.close()
        self.strategy.close()


def supervised_warm_start(
    config: Config,
    log: Callable[[str], None] = print,
    *,
    view: RunView | None = None,
    resume: bool = False,
    stop: StopRequest | None = None,
    clock: RunClock | None = None,
    on_evaluation: Callable[[int, dict[str, float], float], None] | None = None,
) -> WarmStartState:
    """Trains ``config.model`` on ``config.sft.episodes`` oracle episodes, or until the run's
    clock reaches ``sft.max_minutes`` (without it, the whole run's ``train.max_minutes``),
    checkpointing as it goes.

    It is written under ``<train.output_dir>/sft/``, apart from the run's RL checkpoints. Its
    ``model/`` folder is a full Hugging Face model (LoRA merged), ready for
    ``roll-agent train --model <that folder>``.

    With ``on_evaluation``, the policy is evaluated greedily (``train.eval_groups`` held-out
    seeds) before the first step when ``train.eval_before`` is set, and every
    ``train.eval_every_minutes`` of the run; each result goes to
    ``on_evaluation(step, eval_metrics, seconds_it_took)``. Evaluations count in the time
    limit, as they do in the run's budget.

    Args:
        config: the run's configuration.
        log: where lines go when no ``view`` is given.
        view: shows its progress.
        resume: continue the run's unfinished warm start (without it, one is started over).
        stop: when requested (Ctrl-C), it saves and returns unfinished.
        clock: the whole run's clock (default: one started now, or where the checkpoint left
            it on resume).
        on_evaluation: receives each evaluation (none without it).

    Returns:
        Its state: the checkpoint, and whether it finished (``False`` when ``stop`` ended it).
    """
    before = WarmStartState.of_run(config)
    if before.finished:
        return before
    if before.checkpoint is not None and not resume:
        shutil.rmtree(checkpoints_dir(sft_dir(config)))
    resume_from = before.checkpoint if resume else None
    sft = OracleSFT(config, log=log, resume_from=resume_from, view=view, clock=clock)
    clock = sft.clock
    minutes = config.sft.max_minutes or config.train.max_minutes
    limit_s = None if minutes is None else 60 * minutes
    evaluation = _warm_start_evaluation(config, sft) if on_evaluation is not None else None
    every_s = None if evaluation is None else _minutes_to_s(config.train.eval_every_minutes)

    def evaluate() -> None:
        assert evaluation is not None and on_evaluation is not None
        evaluation.generator.update_weights(sft.strategy.inference_state_dict())
        on_evaluation(sft.step, evaluation(), evaluation.seconds)

    try:
        if evaluation is not None and config.train.eval_before and sft.step == 0:
            evaluate()
        next_eval_s = None if every_s is None else clock.elapsed_s() + every_s
        while not sft.finished and not (stop is not None and stop.requested):
            ends = [t for t in (limit_s, next_eval_s) if t is not None]
            sft.train(
                max_seconds=max(min(ends) - clock.elapsed_s(), 0.0) if ends else None,
                stop=stop,
                checkpoint_to=sft_dir(config),
            )
            if limit_s is not None and clock.elapsed_s() >= limit_s:
                break
            if next_eval_s is not None and clock.elapsed_s() >= next_eval_s:
                evaluate()
                next_eval_s = clock.elapsed_s() + every_s
        if limit_s is not None and not sft.finished and not (stop is not None and stop.requested):
            sft.finished = True  # its time is up: what it learned is the warm start
        folder = sft.save(sft_dir(config))
    finally:
        sft.close()  # its train workers too, before RL starts its own
    if sft.finished:
        sft.log(f"Warm start done: {sft.episodes_seen} oracle episodes, {sft.step} steps.")
    else:
        sft.log(f"Saved {folder}")
    return WarmStartState(folder, sft.step, sft.finished, sft.elapsed_s, clock.elapsed_s())


def _minutes_to_s(minutes: float | None) -> float | None:
    return None if minutes is None else 60 * minutes


def _warm_start_evaluation(config: Config, sft: OracleSFT) -> GreedyEvaluation | SeatMatches | None:
    """Greedy evaluation with a copy of the warm start's model, if the run asks for any
    (``train.eval_before`` or ``train.eval_every_minutes``) and the model is in this process
    (a distributed strategy's train workers hold theirs: no evaluation in its warm start)."""
    wanted = config.train.eval_before or config.train.eval_every_minutes is not None
    model = getattr(sft.strategy, "model", None)
    if not wanted or model is None:
        return None
    if config.env.self_play:
        return SeatMatches.with_copy_of(config, model, sft.tokenizer)
    return GreedyEvaluation.with_copy_of(config, model, sft.tokenizer)
