"""``EnvManagerActor``: a Ray actor playing up to K episodes at once, each on its own.

It wraps an :class:`~trainer.rollout.env_manager.EnvManager` without a generator: every turn of
every episode sends its one prompt to a :class:`~trainer.generation.actor.GeneratorActor`, so an
episode waiting for a reply or for a slow env step never holds up the others. A finished
episode's trajectory goes back at once, as the result of its :meth:`run_episode` call.

Cut short:

* past ``episode_timeout_s`` an episode ends with ``finish_reason="timeout"`` and what it played
  is returned (the scheduler counts it);
* a caller's ``ray.cancel`` (a straggler the scheduler no longer needs) ends it with
  ``finish_reason="aborted"``, and the generation request it was waiting on is cancelled too.

Like the generator actor it is a plain class; ``ray.remote(EnvManagerActor)`` makes the actor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.rollout.env_manager import ContextMode, EnvManager
from trainer.rollout.portable_tokenizer import PortableTokenizer
from trainer.rollout.trajectory import Trajectory

__all__ = ["EnvManagerActor"]


class EnvManagerActor:
    """Hosts ``max_envs`` envs of ``env_id`` and plays episodes against ``generator``.

    Args:
        env_id: a registered rollenv id.
        tokenizer: the policy's tokenizer: a :class:`PortableTokenizer` (no torch in this
            process) or a :func:`trainer.models.load_tokenizer` name (imports torch).
        generator: a handle to a ``GeneratorActor`` (anything with ``generate.remote``), or a
            list of them (the replicas of a :class:`~trainer.generation.fleet.GeneratorFleet`):
            each episode then picks the replica this actor sends the fewest episodes to, and
            all its turns go there (sticky routing: that replica holds its cached prefix).
        max_envs: episodes played at once; more calls wait for a free env.
        episode_timeout_s: an episode still running after this many seconds is cut.
        sampling: sampling parameters of every reply.
        env_kwargs, max_turns, context, window, max_context_tokens, wrap, reply_prefix: as
            :class:`EnvManager`.
    """

    def __init__(
        self,
        env_id: str,
        tokenizer: PortableTokenizer | str,
        generator: Any,
        *,
        max_envs: int = 8,
        episode_timeout_s: float | None = None,
        sampling: SamplingParams | None = None,
        env_kwargs: dict[str, Any] | None = None,
        max_turns: int = 10,
        context: ContextMode = "full",
        window: int = 2,
        max_context_tokens: int = 4096,
        wrap: Callable[[gym.Env], gym.Env] | None = None,
        reply_prefix: str = "",
    ) -> None:
        if isinstance(tokenizer, str):
            from trainer.models import load_tokenizer

            tokenizer = load_tokenizer(tokenizer)
        self.manager = EnvManager(
            env_id,
            tokenizer,
            None,
            env_kwargs=env_kwargs,
            group_size=1,
            max_turns=max_turns,
            context=context,
            window=window,
            sampling=sampling,
            max_context_tokens=max_context_tokens,
            wrap=wrap,
            reply_prefix=reply_prefix,
        )
        self.replicas = list(generator) if isinstance(generator, (list, tuple)) else [generator]
        if not self.replicas:
            raise ValueError("EnvManagerActor needs a generator (or a non-empty list of them)")
        self._episodes_on = [0] * len(self.replicas)
        self.max_envs = max_envs
        self.episode_timeout_s = episode_timeout_s
        self._slots: asyncio.Semaphore | None = None
        self.stats = {"episodes": 0, "timeouts": 0, "aborted": 0, "failed": 0, "running": 0}

    async def run_episode(
        self, seed: int, group_id: int, sampling: SamplingParams | None = None
    ) -> Trajectory:
        """Plays one episode from ``seed`` as a member of group ``group_id``.

        ``sampling`` replaces the actor's sampling parameters for this episode (greedy
        evaluation episodes, for one). The trajectory's ``generator_replica`` says which
        replica served all its turns.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_envs)
            # env steps run in threads: as many as there are envs, not asyncio's default 6-ish
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(self.max_envs))
        async with self._slots:
            episode = await asyncio.to_thread(self.manager.start_episode, seed, group_id)
            replica = min(range(len(self.replicas)), key=self._episodes_on.__getitem__)
            episode.trajectory.generator_replica = replica

            async def generate(prompt: list[int], params: SamplingParams) -> GenerationOutput:
                return await self._generate(replica, prompt, sampling or params)

            play = asyncio.ensure_future(self.manager.play_episode(episode, generate))
            self._episodes_on[replica] += 1
            self.stats["running"] += 1
            try:
                await asyncio.wait_for(asyncio.shield(play), self.episode_timeout_s)
            except TimeoutError:
                await _cancel(play)
                self.stats["timeouts"] += 1
                return self.manager.finish_episode(episode, "timeout")
            except asyncio.CancelledError:
                await _cancel(play)
                self.stats["aborted"] += 1
                self.manager.finish_episode(episode, "aborted")
                raise
            except Exception:
                episode.env.close()  # not given back: the next episode gets a new env
                self.stats["failed"] += 1
                raise
            finally:
                self.stats["running"] -= 1
                self._episodes_on[replica] -= 1
            self.stats["episodes"] += 1
            return play.result()

    async def get_stats(self) -> dict[str, Any]:
        """Episodes finished, cut by the timeout, aborted, failed, running now, and the Ray
        node this actor runs on."""
        import ray

        return {**self.stats, "node_id": ray.get_runtime_context().get_node_id()}

    async def _generate(
        self, replica: int, prompt: list[int], params: SamplingParams
    ) -> GenerationOutput:
        reply = self.replicas[replica].generate.remote(prompt, params)
        try:
            return await reply
        except asyncio.CancelledError:
            import ray

            ray.cancel(reply)
            raise


async def _cancel(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def portable_tokenizer(tokenizer: Any) -> PortableTokenizer:
    """``tokenizer`` (a name, a ``transformers`` fast tokenizer or a :class:`PortableTokenizer`)
    as a :class:`PortableTokenizer`, which actors can load without torch."""
    if isinstance(tokenizer, PortableTokenizer):
        return tokenizer
    if isinstance(tokenizer, str):
        from trainer.models import load_tokenizer

        tokenizer = load_tokenizer(tokenizer)
    return PortableTokenizer.from_hf(tokenizer)


def shared_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` (as :func:`portable_tokenizer` takes it) in the Ray object store, once: the
    reference can start several sets of actors, which then share one copy (about 2 MB).

    Ray frees an actor's constructor arguments once the actor is up, and a restart would then
    fail to read them (ray-project/ray#53727), so this driver keeps the reference for the
    job's lifetime.
    """
    import ray

    return _pinned(ray.put(portable_tokenizer(tokenizer)))


def launch_env_managers(
    count: int,
    env_id: str,
    tokenizer: Any,
    generator: Any,
    *,
    num_cpus: float = 0.25,
    actor_options: dict[str, Any] | None = None,
    **options: Any,
) -> list[Any]:
    """Starts ``count`` ``EnvManagerActor`` actors on the connected Ray cluster.

    Ray restarts an actor whose process dies (``max_restarts=-1``) and sends it again the calls
    it was running (``max_task_retries=-1``), so those episodes are played again from their
    seed. An episode that raised is retried by
    :class:`~trainer.rollout.scheduler.RolloutScheduler` instead.

    Args:
        count: actors to start.
        env_id, generator, **options: as :class:`EnvManagerActor`.
        tokenizer: a tokenizer name, a ``transformers`` fast tokenizer, a
            :class:`PortableTokenizer`, or the reference :func:`shared_tokenizer` returned
            (to start several sets of actors from one copy); the actors get the portable
            copy, so they never import torch.
        num_cpus: Ray CPUs each actor reserves (fractional: env actors mostly wait).
        actor_options: more Ray actor options, e.g. ``{"resources": {"env_node": 0.1}}`` or a
            ``scheduling_strategy`` to place the actors on chosen nodes.
    """
    import ray

    shared = tokenizer if isinstance(tokenizer, ray.ObjectRef) else shared_tokenizer(tokenizer)
    remote = ray.remote(num_cpus=num_cpus, max_restarts=-1, max_task_retries=-1)(EnvManagerActor)
    remote = remote.options(**(actor_options or {}))
    return [remote.remote(env_id, shared, generator, **options) for _ in range(count)]


_PINNED: dict[str, list[Any]] = {}  # Ray job id -> object references kept alive in it


def _pinned(reference: Any) -> Any:
    """Keeps ``reference`` alive while this Ray job runs (a new job forgets older ones')."""
    import ray

    job = ray.get_runtime_context().get_job_id()
    for other in [j for j in _PINNED if j != job]:
        del _PINNED[other]
    _PINNED.setdefault(job, []).append(reference)
    return reference
