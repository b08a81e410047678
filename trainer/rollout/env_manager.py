"""``EnvManager``: plays groups of episodes of one env against a generator.

A group is ``group_size`` envs reset with the same seed, so they start from the same state and
their returns can be compared (GRPO, GiGPO). Each turn the manager asks the generator for one
reply per running episode, in one batched call, steps the envs with the decoded replies, and
records everything as ``Trajectory`` data.

Two schedules:

* ``lockstep``: every running episode's turn k is one batched ``generate`` call; turn k+1 starts
  when the slowest reply of turn k is done. Any generator.
* ``continuous`` (sample-level scheduling, as ROLL): each episode's next prompt joins the
  generator's running batch the moment its reply is done and its env has stepped, and a new
  episode starts the moment one ends, so the batch stays full. It needs a generator with a
  ``stream`` (:meth:`~trainer.generation.continuous.ContinuousGenerator.stream`).

Two context modes:

* ``full`` (StarPO): the prompt is the whole episode so far; one training sample per episode.
* ``window`` (GiGPO, as verl-agent): the prompt is the instruction and the last ``window`` turns;
  one training sample per turn.

Tool calls (``env_kwargs={"action_format": "tools"}``): the prompt lists the env's tools as
the tool-call format renders them, each sampled reply is parsed into an assistant message with
``tool_calls`` (text that holds none is still sent: the env answers it as an invalid action),
and the ``role: tool`` messages that answer it form the next turn. In ``full`` context they are
tokenised once and appended after the sampled ids (:meth:`ChatTokens.next_messages`).

Example:
    >>> from trainer.models import load_model  # doctest: +SKIP
    >>> model, tokenizer = load_model("tiny-random")  # doctest: +SKIP
    >>> manager = EnvManager("Sokoban-v0", tokenizer, HFGenerator(model, tokenizer),
    ...                      group_size=4)  # doctest: +SKIP
    >>> trajectories = manager.rollout(seeds=[0, 1])  # doctest: +SKIP
    >>> len(trajectories)  # doctest: +SKIP
    8
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import gymnasium as gym

import rollenv
from rollenv.policies import Policy
from rollenv.wrappers import ChatHistory
from trainer.generation.base import (
    GenerationOutput,
    Generator,
    SamplingParams,
    StreamingGenerator,
)
from trainer.generation.stop_strings import cut_after_stop
from trainer.rollout.chat_tokens import ChatTokens
from trainer.rollout.deferred_rewards import DeferredRewards
from trainer.rollout.trajectory import Sample, Trajectory, Turn
from trainer.tool_call_formats import tool_call_format_for

if TYPE_CHECKING:  # a PortableTokenizer does as well, and keeps torch out of env actors
    from transformers import PreTrainedTokenizerBase

    from trainer.config import Config
    from trainer.rewards.pool import RewardPool

ContextMode = Literal["full", "window"]
Schedule = Literal["lockstep", "continuous"]


@dataclass
class _Episode:
    """The running state of one episode (the manager's private bookkeeping)."""

    env: ChatHistory
    trajectory: Trajectory
    messages: list[dict[str, Any]]
    anchor: str
    tools: list[dict[str, Any]] | None = None
    tokens: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turn_of_token: list[int] = field(default_factory=list)
    # the weight version of each token (-1: a prompt token, or a generator that numbers none)
    weight_versions: list[int] = field(default_factory=list)
    done: bool = False


class EnvManager:
    """Runs groups of episodes of ``env_id`` and returns their trajectories.

    Args:
        env_id: a registered rollenv id.
        tokenizer: the policy's tokenizer (its chat template builds the prompts).
        generator: where replies come from (``None`` if every rollout passes a ``policy``).
        env_kwargs: keyword arguments for ``rollenv.make``.
        group_size: episodes per group (all reset with the group's seed).
        max_turns: turns before an episode is cut (``finish_reason="max_turns"``).
        context: ``"full"`` or ``"window"`` (see the module docstring).
        window: turns kept in window mode.
        sampling: sampling parameters of every reply.
        max_context_tokens: a full-context episode whose next prompt would be longer ends
            (``finish_reason="context"``).
        wrap: applied to every env made (e.g. a :class:`~rollenv.wrappers.Latency` wrapper).
        step_threads: envs :meth:`rollout` steps at once, in threads (for slow envs: a turn
            then waits for the slowest step, not for the sum of them).
        schedule: ``"lockstep"`` or ``"continuous"`` (see the module docstring).
        episodes_in_flight: with ``"continuous"``, the most episodes played at once (whole
            groups; default: the generator's ``max_batch_size``); the others start as those end.
        reward_pool: reward workers that score the envs' answers (the envs are made with
            ``defer_reward=True``; see :mod:`trainer.rollout.deferred_rewards`). An episode's
            request goes to the pool when it ends, and the manager generates on meanwhile;
            :meth:`rollout` returns once every reward is in.
        reply_prefix: text that starts every reply: its tokens end each prompt (untrained),
            and the env reads it before the generated text (``env.reply_prefix``).
        tool_call_format: with ``env_kwargs["action_format"] == "tools"``, the registered
            tool-call format of the policy's replies (``"auto"``: see
            :func:`trainer.tool_call_formats.tool_call_format_for`).

    A reply sampled with stop strings (``SamplingParams.stop``) reaches the env cut after the
    first of them, as a server that stops on it returns it.
    """

    def __init__(
        self,
        env_id: str,
        tokenizer: PreTrainedTokenizerBase,
        generator: Generator | None,
        *,
        env_kwargs: dict[str, Any] | None = None,
        group_size: int = 8,
        max_turns: int = 10,
        context: ContextMode = "full",
        window: int = 2,
        sampling: SamplingParams | None = None,
        max_context_tokens: int = 4096,
        wrap: Callable[[gym.Env], gym.Env] | None = None,
        step_threads: int = 1,
        schedule: Schedule = "lockstep",
        episodes_in_flight: int | None = None,
        reward_pool: RewardPool | None = None,
        reply_prefix: str = "",
        tool_call_format: str = "auto",
    ):
        if context not in ("full", "window"):
            raise ValueError(f"context must be 'full' or 'window', got {context!r}")
        if schedule not in ("lockstep", "continuous"):
            raise ValueError(f"schedule must be 'lockstep' or 'continuous', got {schedule!r}")
        if schedule == "continuous" and not isinstance(generator, StreamingGenerator):
            raise ValueError(
                f"schedule 'continuous' needs a generator with a stream (the 'continuous' "
                f"backend), not {type(generator).__name__}; use schedule='lockstep'"
            )
        self.env_id = rollenv.spec(env_id).id
        self.env_kwargs = dict(env_kwargs or {})
        self.reward_pool = reward_pool
        if reward_pool is not None:
            check_defers_rewards(self.env_id)
            self.env_kwargs["defer_reward"] = True
        self.tokenizer = tokenizer
        self.generator = generator
        self.group_size = group_size
        self.max_turns = max_turns
        self.context = context
        self.window = window
        self.sampling = sampling or SamplingParams(stop_token_ids=(tokenizer.eos_token_id,))
        self.max_context_tokens = max_context_tokens
        self.tool_format = (
            tool_call_format_for(tool_call_format, tokenizer)
            if self.env_kwargs.get("action_format") == "tools"
            else None
        )
        self.chat = ChatTokens(tokenizer, tool_format=self.tool_format)
        self.reply_prefix = reply_prefix
        self._prefix_tokens: list[int] = (
            tokenizer.encode(reply_prefix, add_special_tokens=False) if reply_prefix else []
        )
        self.wrap = wrap
        self.step_threads = step_threads
        self.schedule = schedule
        self.episodes_in_flight = episodes_in_flight
        self._envs: list[ChatHistory] = []  # rollout()'s, one per episode of a call
        self._free: list[ChatHistory] = []  # play_episode()'s, not in use now

    @classmethod
    def from_config(
        cls,
        config: Config,
        tokenizer: Any,
        generator: Generator | None,
        group_size: int,
        sampling: SamplingParams | None = None,
        reward_pool: RewardPool | None = None,
        *,
        evaluation: bool = False,
    ) -> EnvManager:
        """The env manager ``config.env`` describes, playing ``group_size`` episodes a seed
        (``generator`` ``None``: a policy given to ``rollout`` writes every reply);
        ``evaluation`` makes its envs with ``env.eval_kwargs`` laid over ``env.kwargs``."""
        env = config.env
        return cls(
            env.id,
            tokenizer,
            generator,
            env_kwargs=env.eval_make_kwargs if evaluation else env.make_kwargs,
            group_size=group_size,
            max_turns=env.max_turns,
            context=env.context,
            window=env.window,
            max_context_tokens=env.max_context_tokens,
            sampling=sampling,
            reward_pool=reward_pool,
            reply_prefix=env.reply_prefix,
            tool_call_format=env.tool_call_format,
        )

    def make_env(self) -> gym.Env:
        """A fresh env of this manager's id and kwargs (unwrapped by ``ChatHistory``)."""
        env = rollenv.make(self.env_id, **self.env_kwargs)
        return self.wrap(env) if self.wrap is not None else env

    def close(self) -> None:
        """Closes every env this manager made (browsers, sandboxes, servers)."""
        for env in self._envs + self._free:
            env.close()
        self._envs, self._free = [], []

    def _env_pool(self, count: int) -> list[ChatHistory]:
        window = None if self.context == "full" else self.window
        while len(self._envs) < count:
            self._envs.append(ChatHistory(self.make_env(), window=window))
        return self._envs[:count]

    def rollout(
        self,
        seeds: list[int],
        group_ids: list[int] | None = None,
        policy: Callable[[gym.Env], Policy] | None = None,
        on_trajectory: Callable[[Trajectory], None] | None = None,
    ) -> list[Trajectory]:
        """Plays one group per seed; returns ``len(seeds) * group_size`` trajectories.

        Args:
            seeds: one reset seed per group.
            group_ids: one id per group (defaults to the position in ``seeds``).
            policy: if given, replies come from ``policy(env)`` (e.g. ``oracle_for``) instead of
                the generator, tokenised and closed with the end-of-turn token: the same
                prompts and samples as RL, for supervised warm start.
            on_trajectory: called with each trajectory as it ends (with the ``continuous``
                schedule, while the others play on: a caller can store it at once).

        Returns:
            The trajectories, group by group in the order of ``seeds``.
        """
        group_ids = list(range(len(seeds))) if group_ids is None else list(group_ids)
        if len(group_ids) != len(seeds):
            raise ValueError("give one group id per seed")
        if self.schedule == "continuous" and policy is None:
            return self._rollout_continuous(seeds, group_ids, on_trajectory)
        envs = self._env_pool(len(seeds) * self.group_size)
        episodes = [
            self._start(env, seeds[i // self.group_size], group_ids[i // self.group_size])
            for i, env in enumerate(envs)
        ]
        policies = None if policy is None else {id(e): policy(e.env) for e in episodes}
        deferred = DeferredRewards(self.reward_pool) if self.reward_pool is not None else None

        # a batch-level system steps every env at once and waits for the slowest
        pool = ThreadPoolExecutor(self.step_threads) if self.step_threads > 1 else None
        try:
            for turn in range(self.max_turns):
                running = [e for e in episodes if not e.done]
                if not running:
                    break
                prompts = [self._prompt(e) for e in running]
                if policies is None:
                    if self.generator is None:
                        raise ValueError(
                            "this EnvManager has no generator: pass a policy to rollout"
                        )
                    outputs = self.generator.generate(prompts, self.sampling.for_turn(turn))
                else:
                    outputs = [self._policy_reply(policies[id(e)], e) for e in running]
                steps = [(e, turn, p, o) for e, p, o in zip(running, prompts, outputs, strict=True)]
                list((pool.map if pool else map)(lambda args: self._record(*args), steps))
                if deferred is not None:  # scored while the next turns generate
                    deferred.submit([(id(e), e.trajectory) for e in running if e.done])
        finally:
            if pool is not None:
                pool.shutdown()
        if deferred is not None:
            deferred.finish_all()
        for episode in episodes:
            if not episode.done:
                self._finish(episode, "max_turns")
            if on_trajectory is not None:
                on_trajectory(episode.trajectory)
        return [e.trajectory for e in episodes]

    def _rollout_continuous(
        self,
        seeds: list[int],
        group_ids: list[int],
        on_trajectory: Callable[[Trajectory], None] | None,
    ) -> list[Trajectory]:
        """:meth:`rollout` with the ``continuous`` schedule: one generator stream; an episode's
        next prompt is submitted as soon as its env has stepped, and the next group starts as
        soon as enough episodes have ended."""
        assert self.generator is not None
        stream = self.generator.stream(self.sampling)  # type: ignore[attr-defined]
        limit = self.episodes_in_flight or getattr(self.generator, "max_batch_size", 32)
        limit = max(self.group_size, limit // self.group_size * self.group_size)
        window = None if self.context == "full" else self.window
        free = self._env_pool(min(limit, len(seeds) * self.group_size))[::-1]
        waiting = deque(enumerate(zip(seeds, group_ids, strict=True)))
        results: list[Trajectory | None] = [None] * (len(seeds) * self.group_size)
        playing: dict[int, tuple[_Episode, int, list[int]]] = {}  # key -> episode, turn, prompt
        deferred = DeferredRewards(self.reward_pool) if self.reward_pool is not None else None

        def ended(key: int) -> None:
            if on_trajectory is not None:
                on_trajectory(results[key])  # type: ignore[arg-type]

        def start_groups() -> None:
            keys, prompts = [], []
            while waiting and len(playing) + self.group_size <= limit:
                group, (seed, group_id) = waiting.popleft()
                for member in range(self.group_size):
                    if not free:
                        self._envs.append(ChatHistory(self.make_env(), window=window))
                        free.append(self._envs[-1])
                    episode = self._start(free.pop(), seed, group_id)
                    key = group * self.group_size + member
                    prompt = self._prompt(episode)
                    playing[key] = (episode, 0, prompt)
                    keys.append(key)
                    prompts.append(prompt)
            if prompts:
                stream.submit_many(prompts, keys)

        def record(key: int, output: GenerationOutput) -> None:
            episode, turn, prompt = playing[key]
            self._record(episode, turn, prompt, output)  # steps the env

        def advance(key: int) -> None:
            episode, turn, _ = playing[key]
            if not episode.done and turn + 1 >= self.max_turns:
                self._finish(episode, "max_turns")
            if episode.done:
                del playing[key]
                results[key] = episode.trajectory
                free.append(episode.env)
                if deferred is not None and episode.trajectory.reward_request is not None:
                    deferred.submit([(key, episode.trajectory)])  # ended once scored
                else:
                    ended(key)
                return
            prompt = self._prompt(episode)
            playing[key] = (episode, turn + 1, prompt)
            stream.submit(prompt, key)

        # slow envs step in threads, all those whose replies a forward pass finished at once
        pool = ThreadPoolExecutor(self.step_threads) if self.step_threads > 1 else None
        try:
            start_groups()
            while stream.busy:
                finished = stream.step()
                list((pool.map if pool else map)(lambda f: record(*f), finished))
                for key, _ in finished:
                    advance(key)
                start_groups()
                for key in deferred.finished() if deferred is not None else ():
                    ended(key)
            for key in deferred.finish_all() if deferred is not None else ():
                ended(key)
        finally:
            if pool is not None:
                pool.shutdown()
        return results  # type: ignore[return-value]

    async def play_episode(
        self,
        episode: _Episode,
        generate: Callable[[list[int], SamplingParams], Awaitable[GenerationOutput]],
    ) -> Trajectory:
        """Plays one episode on its own, awaiting ``generate(prompt, sampling)`` for each reply.

        Unlike :meth:`rollout`, nothing waits for other episodes: an env manager actor runs
        many of these at once and hands each trajectory on when it ends. The env steps in a
        worker thread, so a slow env does not hold up the other episodes.

        Args:
            episode: the reset episode, from :meth:`start_episode` (a caller that may have to
                cut it short keeps it, to finish what was played with :meth:`finish_episode`).
            generate: an async function giving one reply to one prompt.
        """
        for turn in range(self.max_turns):
            prompt = self._prompt(episode)
            output = await generate(prompt, self.sampling.for_turn(turn))
            step = asyncio.ensure_future(
                asyncio.to_thread(self._record, episode, turn, prompt, output)
            )
            try:
                await asyncio.shield(step)
            except asyncio.CancelledError:
                await step  # a thread cannot be stopped: let the step land before the cut
                raise
            if episode.done:
                break
        self.finish_episode(episode, "max_turns")
        return episode.trajectory

    def start_episode(self, seed: int, group_id: int) -> _Episode:
        """Resets a free env (or a new one) with ``seed``: the state :meth:`play_episode` plays."""
        window = None if self.context == "full" else self.window
        env = self._free.pop() if self._free else ChatHistory(self.make_env(), window=window)
        try:
            return self._start(env, seed, group_id)
        except BaseException:
            env.close()  # an env that raised is not trusted again: the next episode gets a new one
            raise

    def finish_episode(self, episode: _Episode, reason: str) -> Trajectory:
        """Ends ``episode`` (if it is still running) with ``reason`` and frees its env."""
        if not episode.done:
            self._finish(episode, reason)
        if all(episode.env is not e for e in self._free):
            self._free.append(episode.env)
        return episode.trajectory

    def _start(self, env: ChatHistory, seed: int, group_id: int) -> _Episode:
        obs, info = env.reset(seed=seed)
        # a mixture (Mixture-v0) reports the member this episode plays
        trajectory = Trajectory(info.get("env_id", self.env_id), seed, group_id)
        trajectory.instruction, trajectory.first_observation = info.get("instruction", ""), obs
        episode = _Episode(env, trajectory, info["messages"], info["anchor"], info.get("tools"))
        if self.context == "full":
            episode.tokens = self.chat.prompt(info["messages"], episode.tools) + self._prefix_tokens
            episode.loss_mask = [0] * len(episode.tokens)
            episode.logprobs = [0.0] * len(episode.tokens)
            episode.turn_of_token = [-1] * len(episode.tokens)
            episode.weight_versions = [-1] * len(episode.tokens)
        return episode

    def _policy_reply(self, policy: Policy, episode: _Episode) -> GenerationOutput:
        text = policy.act(episode.messages[-1]["content"], {"messages": episode.messages})
        if self.tool_format is not None:  # the policy sends a message: written as the model would
            text = self.tool_format.write_message(json.loads(text))
        text = text.removeprefix(self.reply_prefix)  # the prompt already ends with it
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.chat.end_of_turn_id]
        return GenerationOutput(token_ids=ids, logprobs=[0.0] * len(ids), finish_reason="stop")

    def _prompt(self, episode: _Episode) -> list[int]:
        if self.context == "full":
            return episode.tokens
        return self.chat.prompt(episode.messages, episode.tools) + self._prefix_tokens

    def _record(
        self, episode: _Episode, turn: int, prompt: list[int], output: GenerationOutput
    ) -> None:
        reply = self.reply_prefix + self.tokenizer.decode(
            output.token_ids, skip_special_tokens=True
        )
        if self.sampling.stop:
            reply = cut_after_stop(reply, self.sampling.stop)
        episode.trajectory.anchors_start.append(episode.anchor)
        action = reply
        if self.tool_format is not None:
            message = self.tool_format.parse(reply).message(call_prefix=f"call_{turn}")
            action = json.dumps(message)
        obs, reward, terminated, truncated, info = episode.env.step(action)
        episode.trajectory.turns.append(
            Turn(
                reply=reply,
                reward=float(reward),
                anchor=info["anchor"],
                metrics=dict(info["metrics"]),
                prompt_tokens=len(prompt),
                response_tokens=len(output.token_ids),
                observation=obs,
            )
        )
        episode.messages, episode.anchor = info["messages"], info["anchor"]
        episode.tools = info.get("tools", episode.tools)
        if info.get("reward_request") is not None:
            episode.trajectory.reward_request = dict(info["reward_request"])
        n = len(output.token_ids)
        versions = output.weight_versions or [-1] * n
        if self.context == "window":
            episode.trajectory.samples.append(
                Sample(
                    token_ids=prompt + output.token_ids,
                    loss_mask=[0] * len(prompt) + [1] * n,
                    logprobs=[0.0] * len(prompt) + list(output.logprobs),
                    turn_of_token=[-1] * len(prompt) + [turn] * n,
                    weight_versions=(
                        [-1] * len(prompt) + list(versions) if output.weight_versions else None
                    ),
                )
            )
        else:
            episode.tokens = episode.tokens + output.token_ids
            episode.loss_mask += [1] * n
            episode.logprobs += list(output.logprobs)
            episode.turn_of_token += [turn] * n
            episode.weight_versions += list(versions)
        if terminated or truncated:
            self._finish(episode, "terminated" if terminated else "truncated")
            return
        if self.context == "full":
            # a stop string ends the reply, not the turn: only the end-of-turn token closes it
            ended = output.finish_reason == "stop" and (
                not self.sampling.stop or output.token_ids[-1:] == [self.chat.end_of_turn_id]
            )
            if self.tool_format is not None:
                following = self.chat.next_messages(_after_last_reply(episode.messages), ended)
            else:
                following = self.chat.next_turn(episode.messages[-1]["content"], ended)
            following += self._prefix_tokens
            if len(episode.tokens) + len(following) > self.max_context_tokens:
                self._finish(episode, "context")
                return
            episode.tokens = episode.tokens + following
            episode.loss_mask += [0] * len(following)
            episode.logprobs += [0.0] * len(following)
            episode.turn_of_token += [-1] * len(following)
            episode.weight_versions += [-1] * len(following)

    def _finish(self, episode: _Episode, reason: str) -> None:
        episode.done = True
        episode.trajectory.finish_reason = reason
        if self.context == "full":
            versions = episode.weight_versions
            episode.trajectory.samples = [
                Sample(
                    episode.tokens,
                    episode.loss_mask,
                    episode.logprobs,
                    episode.turn_of_token,
                    weight_versions=versions if any(v >= 0 for v in versions) else None,
                )
            ]


def _after_last_reply(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages after the last assistant message: the tool results that answer it."""
    last = max(i for i, message in enumerate(messages) if message["role"] == "assistant")
    return messages[last + 1 :]


def check_defers_rewards(env_id: str) -> None:
    """Raises ``ValueError`` (one line) unless ``env_id``'s env takes ``defer_reward``."""
    if not rollenv.spec(env_id).takes("defer_reward"):
        raise ValueError(
            f"{env_id} scores its rewards inside step; reward workers need an env that takes "
            "defer_reward=True (InstructionFollowing-v0, JudgedAnswer-v0, MathVerify-v0, "
            "CodeSandbox-v0, or a Mixture-v0, whose members that take it defer)"
        )
