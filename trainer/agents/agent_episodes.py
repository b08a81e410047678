"""Agent programs as episodes: ``agent(env, llm)`` played through the gateway, one thread each.

The agent contract: an agent is an ``async def agent(env, llm)``. ``env`` is a Gymnasium env
(any rollenv id), which the agent resets and steps itself; ``llm`` is an ``openai.AsyncOpenAI``
client whose ``base_url`` is the gateway's session of this episode. The agent prompts, calls
tools, keeps memory and calls the model as often as it likes. Rewards come from the env; an
agent that scores itself returns a number, added to the episode's last step.

Each episode runs in a thread of its own, with its own event loop: ``env.step`` is synchronous
(so is ``RemoteEnv``'s), and a slow step holds up only its own agent. ``concurrency`` episodes
run at once; the others start as those end. A gateway whose engine is stepped by its callers
(``ServingEngine(..., own_thread=False)``) is stepped by :meth:`AgentEpisodes.play`'s thread
while it waits: on the main thread, torch decodes faster than on another
(``benchmarks/agent_gateway.py``).

Faults are counted and never trained on silently: an agent that raises (``raised``), runs past
its deadline (``deadline``: its session is ended, so its next call gets 410; a thread stuck in
synchronous code is left to end on its own), never calls the model (``no_calls``) or passes
``max_calls`` (``call_limit``). Its episode is dropped, or, with ``failure_reward`` set,
trained on with that return (every step's reward 0 but the last).

Example:
    >>> async def agent(env, llm):  # doctest: +SKIP
    ...     obs, info = env.reset()
    ...     messages = [{"role": "system", "content": info["instruction"]},
    ...                 {"role": "user", "content": obs}]
    ...     for _ in range(10):
    ...         reply = await llm.chat.completions.create(model="policy", messages=messages)
    ...         text = reply.choices[0].message.content
    ...         obs, reward, terminated, truncated, info = env.step(text)
    ...         if terminated or truncated:
    ...             return
    ...         messages += [{"role": "assistant", "content": text},
    ...                      {"role": "user", "content": obs}]
    >>> episodes = AgentEpisodes(agent, "Sokoban-v0", gateway, group_size=4)  # doctest: +SKIP
    >>> batch = episodes.play(seeds=[0, 1])  # doctest: +SKIP
    >>> len(batch.trajectories), batch.failures  # doctest: +SKIP
    (8, {})
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import difflib
import importlib
import inspect
import os
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import rollenv
from trainer.agents.gateway import Gateway
from trainer.agents.segments import samples_of_calls
from trainer.agents.session import Session
from trainer.agents.step_recorder import StepRecorder
from trainer.rollout.trajectory import Trajectory, Turn

__all__ = ["FAILURES", "AgentBatch", "AgentEpisodes", "AgentOutcome", "load_agent"]

AgentFunction = Callable[[Any, Any], Awaitable[Any]]

FAILURES = ("raised", "deadline", "no_calls", "call_limit")
"""How an agent episode can fail, as :attr:`AgentOutcome.failure` names it."""


def load_agent(spec: str) -> AgentFunction:
    """The agent function ``spec`` names, ``"package.module:function"``.

    The module is imported as ``python -m`` would from the current folder (which is put on
    ``sys.path``, as uvicorn does for ``module:app``).

    Raises:
        ValueError: ``spec`` is not of that form, the module cannot be imported, it has no such
            function (the message lists the close names), or the function is not
            ``async def`` with two parameters.

    Example:
        >>> load_agent("json:loads")
        Traceback (most recent call last):
        ...
        ValueError: agent json:loads must be an async function agent(env, llm); loads is not async
    """
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        raise ValueError(f"agent must be 'package.module:function', got {spec!r}")
    if os.getcwd() not in sys.path:  # a module beside the command, as uvicorn's app:app finds
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as missing:
        raise ValueError(
            f"agent {spec}: no module named {missing.name!r} (is its package installed, or its "
            "folder on PYTHONPATH?)"
        ) from None
    function = getattr(module, name, None)
    if function is None:
        names = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ValueError(f"agent {spec}: {module_name} has no {name!r}{hint}")
    if not inspect.iscoroutinefunction(function):
        raise ValueError(
            f"agent {spec} must be an async function agent(env, llm); {name} is not async"
        )
    if len(inspect.signature(function).parameters) < 2:
        raise ValueError(f"agent {spec} must take two parameters, (env, llm)")
    return function


@dataclass
class AgentOutcome:
    """What one agent episode left.

    Attributes:
        seed: the episode's reset seed.
        group_id: its group.
        trajectory: what to train on, or ``None`` (a failure dropped, or no call made).
        failure: one of :data:`FAILURES`, or ``None``.
        detail: a failure's message (the exception, the deadline).
        calls: the model calls it made.
        session: the gateway's record of them, token for token.
    """

    seed: int
    group_id: int
    trajectory: Trajectory | None
    failure: str | None = None
    detail: str = ""
    calls: int = 0
    session: Session | None = None


@dataclass
class AgentBatch:
    """The outcomes of one :meth:`AgentEpisodes.play`."""

    outcomes: list[AgentOutcome] = field(default_factory=list)

    @property
    def trajectories(self) -> list[Trajectory]:
        """The trajectories to train on, in the order played."""
        return [o.trajectory for o in self.outcomes if o.trajectory is not None]

    @property
    def failures(self) -> dict[str, int]:
        """How many episodes failed, by kind (kinds with none left out)."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.failure is not None:
                counts[outcome.failure] = counts.get(outcome.failure, 0) + 1
        return counts


@dataclass
class _Job:
    seed: int
    group_id: int
    session: Session
    env: StepRecorder
    deadline: float  # time.monotonic()
    result: tuple[str, Any] | None = None


class AgentEpisodes:
    """Plays groups of episodes of ``env_id`` by an agent program through ``gateway``.

    Args:
        agent: the agent function (or ``"module:function"``).
        env_id: a registered rollenv id.
        gateway: serves the policy; a session is opened per episode.
        env_kwargs: keyword arguments for ``rollenv.make``.
        group_size: episodes per seed.
        concurrency: the most episodes played at once.
        deadline_s: an episode still running after this many seconds is ended (``deadline``).
        max_calls: the most model calls an episode may make (``call_limit`` past it).
        max_tokens: a ceiling on each call's reply (``None``: what the agent asks).
        failure_reward: the return a failed episode is trained on with (``None``: dropped).
    """

    def __init__(
        self,
        agent: AgentFunction | str,
        env_id: str,
        gateway: Gateway,
        *,
        env_kwargs: dict[str, Any] | None = None,
        group_size: int = 1,
        concurrency: int = 16,
        deadline_s: float = 600.0,
        max_calls: int | None = 256,
        max_tokens: int | None = None,
        failure_reward: float | None = None,
    ) -> None:
        self.agent = load_agent(agent) if isinstance(agent, str) else agent
        self.env_id = rollenv.spec(env_id).id
        self.gateway = gateway
        self.env_kwargs = dict(env_kwargs or {})
        self.group_size = group_size
        self.concurrency = concurrency
        self.deadline_s = deadline_s
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.failure_reward = failure_reward

    def play(
        self, seeds: list[int], group_ids: list[int] | None = None, *, greedy: bool = False
    ) -> AgentBatch:
        """Plays ``group_size`` episodes from each seed; returns once every one has ended.

        Args:
            seeds: one reset seed per group.
            group_ids: one id per group (default: the position in ``seeds``).
            greedy: sample every call greedily (held-out evaluation), whatever it asks.
        """
        group_ids = list(range(len(seeds))) if group_ids is None else list(group_ids)
        if len(group_ids) != len(seeds):
            raise ValueError("give one group id per seed")
        planned = [
            (seed, group) for seed, group in zip(seeds, group_ids, strict=True)
            for _ in range(self.group_size)
        ]  # fmt: skip
        done: queue.SimpleQueue[int] = queue.SimpleQueue()
        jobs: list[_Job | None] = [None] * len(planned)
        running: set[int] = set()
        started = 0
        while started < len(planned) or running:
            while started < len(planned) and len(running) < self.concurrency:
                jobs[started] = self._start(started, *planned[started], greedy, done)
                running.add(started)
                started += 1
            now = time.monotonic()
            # a stuck thread is given up on a little after the deadline its own loop enforces
            wait = min(jobs[i].deadline for i in running) + 2.0 - now  # type: ignore[union-attr]
            engine = self.gateway.engine
            if engine.steps_on_caller:  # this thread decodes while it waits
                engine.run_for(max(wait, 0.01), until=lambda: not done.empty())
            else:
                with contextlib.suppress(queue.Empty):
                    running.discard(done.get(timeout=max(wait, 0.01)))
            while not done.empty():
                running.discard(done.get_nowait())
            now = time.monotonic()
            for index in list(running):
                job = jobs[index]
                assert job is not None
                if now > job.deadline + 2.0:
                    job.result = ("deadline", f"still running {self.deadline_s:g} s after it began")
                    self.gateway.end_session(job.session, "deadline")
                    running.discard(index)
        return AgentBatch([self._outcome(job) for job in jobs if job is not None])

    def _start(
        self, index: int, seed: int, group_id: int, greedy: bool, done: queue.SimpleQueue[int]
    ) -> _Job:
        session = self.gateway.open_session(
            max_calls=self.max_calls, greedy=greedy, max_tokens=self.max_tokens
        )
        env = StepRecorder(rollenv.make(self.env_id, **self.env_kwargs), seed)
        job = _Job(seed, group_id, session, env, time.monotonic() + self.deadline_s)
        thread = threading.Thread(
            target=self._run, args=(index, job, done), name=f"agent-{session.id}", daemon=True
        )
        thread.start()
        return job

    def _run(self, index: int, job: _Job, done: queue.SimpleQueue[int]) -> None:
        try:
            result: tuple[str, Any] = ("returned", asyncio.run(self._call_agent(job)))
        except TimeoutError as error:
            passed = time.monotonic() >= job.deadline - 0.05
            result = (
                ("deadline", f"still running {self.deadline_s:g} s after it began")
                if passed
                else ("raised", f"{type(error).__name__}: {error}")
            )
        except BaseException as error:  # an agent's fault is its episode's, never the run's
            result = ("raised", f"{type(error).__name__}: {error}")
        finally:
            job.env.close()
        if job.result is None:  # not already given up on
            job.result = result
        done.put(index)

    async def _call_agent(self, job: _Job) -> Any:
        import openai

        llm = openai.AsyncOpenAI(
            base_url=self.gateway.base_url(job.session),
            api_key="rollenv-gateway",
            timeout=self.deadline_s,
        )
        try:
            remaining = max(job.deadline - time.monotonic(), 0.0)
            return await asyncio.wait_for(self.agent(job.env, llm), timeout=remaining)
        finally:
            await llm.close()

    def _outcome(self, job: _Job) -> AgentOutcome:
        kind, value = job.result or ("raised", "no result")
        session = self.gateway.end_session(job.session, "finished" if kind == "returned" else kind)
        failure, detail = (kind, str(value)) if kind != "returned" else (None, "")
        if session.ended == "call_limit":  # whether the agent then raised or returned
            failure = "call_limit"
            detail = f"called the model more than max_calls={self.max_calls} times"
        calls = list(session.calls)
        if failure is None and not calls:
            failure, detail = "no_calls", "the agent never called the model"
        outcome = AgentOutcome(
            job.seed, job.group_id, None, failure, detail, len(calls), session=session
        )
        if calls and (failure is None or self.failure_reward is not None):
            returned = value if failure is None else None
            outcome.trajectory = self._trajectory(job, calls, returned, failure)
        return outcome

    def _trajectory(
        self, job: _Job, calls: list[Any], returned: Any, failure: str | None
    ) -> Trajectory:
        env = job.env
        steps = list(env.steps)
        starts = [step.started_ns for step in steps]
        trajectory = Trajectory(self.env_id, job.seed, job.group_id)
        trajectory.instruction = env.instruction
        trajectory.first_observation = str(env.first_observation)
        ends = [call.ended_ns for call in calls]  # in order: calls are recorded as they end
        for step in steps:
            # the step's driver: the last call that ended before it began
            before = bisect.bisect_left(ends, step.started_ns)
            driver = calls[before - 1] if before else None
            trajectory.turns.append(
                Turn(
                    reply=driver.reply_text if driver else "",
                    reward=step.reward,
                    anchor=step.anchor,
                    metrics=step.metrics,
                    prompt_tokens=len(driver.prompt_ids) if driver else 0,
                    response_tokens=len(driver.token_ids) if driver else 0,
                    observation=str(step.observation),
                )
            )
            trajectory.anchors_start.append(step.anchor_before)
        extra = None
        if failure is not None:
            for turn in trajectory.turns:
                turn.reward = 0.0
            extra = self.failure_reward
        elif isinstance(returned, int | float) and not isinstance(returned, bool):
            extra = float(returned)
        if extra is not None:
            if not trajectory.turns:
                # the env never stepped: one turn holds the reward (and no valid action)
                unplayed = {"action_is_valid": False, "action_is_effective": False}
                trajectory.turns.append(Turn(calls[-1].reply_text, 0.0, "", unplayed, 0, 0))
                trajectory.anchors_start.append("")
            trajectory.turns[-1].reward += extra
        if failure is not None:
            trajectory.turns[-1].metrics = {**trajectory.turns[-1].metrics, "success": False}
        trajectory.samples = samples_of_calls(calls, starts)
        trajectory.finish_reason = (
            "aborted"
            if failure is not None
            else "terminated"
            if env.terminated
            else "truncated"
            if env.truncated
            else "agent_stopped"
        )
        return trajectory
