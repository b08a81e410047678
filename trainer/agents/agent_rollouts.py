"""``AgentRollouts``: a training run's episodes played by an agent program through the gateway
(``agent.function`` set; ``roll-agent train --agent module:function``).

The generator beside the trainer is served by a :class:`~trainer.agents.gateway.Gateway` on
127.0.0.1; each step plays ``env.groups_per_step`` seeds, ``env.group_size`` episodes each, by
:class:`~trainer.agents.agent_episodes.AgentEpisodes`, and trains on the episodes that did not
fail. The held-out evaluation plays the same agent on seeds ``0 .. train.eval_groups - 1`` with
every call sampled greedily; an episode that failed counts as not solved. New weights reach the
engine between two of its forward passes. It implements :class:`~trainer.rollout.rollouts.
Rollouts`.
"""

from __future__ import annotations

from typing import Any

from trainer.agents.agent_episodes import FAILURES, AgentBatch, AgentEpisodes
from trainer.agents.gateway import Gateway
from trainer.config import Config
from trainer.rollout.metrics import rollout_metrics
from trainer.rollout.seeds import step_seeds
from trainer.serving.engine import ServingEngine

__all__ = ["AgentRollouts", "agent_metrics"]


def agent_metrics(batch: AgentBatch, prefix: str) -> dict[str, float]:
    """``rollout_metrics`` of the episodes that can be trained on, with success over every
    episode played (a failed one is not solved) and each failure's share."""
    played = len(batch.outcomes)
    trajectories = batch.trajectories
    metrics = rollout_metrics(trajectories, prefix) if trajectories else {}
    solved = sum(t.success for o in batch.outcomes if (t := o.trajectory) and o.failure is None)
    metrics[f"{prefix}/success"] = solved / max(played, 1)
    failures = batch.failures
    for kind in FAILURES:
        metrics[f"{prefix}/agent_{kind}"] = failures.get(kind, 0) / max(played, 1)
    metrics[f"{prefix}/calls_per_episode"] = sum(o.calls for o in batch.outcomes) / max(played, 1)
    return metrics


class AgentRollouts:
    """The gateway, the agent's training episodes and its greedy evaluation.

    Args:
        config: the run's configuration (``agent`` names the agent and its limits).
        generator: the in-process engine (``generation.backend: continuous``); the gateway
            serves it from now on.
    """

    def __init__(self, config: Config, generator: Any) -> None:
        if not hasattr(generator, "stream"):
            raise ValueError(
                "agent.function trains through the gateway, which serves the continuous engine: "
                f"set generation.backend=continuous (got {config.generation.backend})"
            )
        self.config = config
        # stepped by play() on this (main) thread, where torch decodes fastest
        self.engine = ServingEngine(generator, own_thread=False)
        self.gateway = Gateway(
            self.engine,
            tool_call_format=config.env.tool_call_format,
            record_choices=config.agent.choices_up_to,
        )
        agent = config.agent

        def episodes(group_size: int, kwargs: dict[str, Any]) -> AgentEpisodes:
            return AgentEpisodes(
                agent.function,  # type: ignore[arg-type]
                config.env.id,
                self.gateway,
                env_kwargs=kwargs,
                group_size=group_size,
                concurrency=agent.concurrency,
                deadline_s=agent.deadline_s,
                max_calls=agent.max_calls,
                max_tokens=config.sampling.max_new_tokens,
                failure_reward=agent.failure_reward,
            )

        self.training = episodes(config.env.group_size, config.env.make_kwargs)
        self.evaluation = episodes(1, config.env.eval_make_kwargs)
        self._metrics: dict[str, float] = {}

    def rollout(self, step: int, version: int) -> list[Any]:
        """Plays step ``step``'s groups; returns the trajectories of the episodes that did not
        fail (or, with ``agent.failure_reward``, of every one that called the model)."""
        seeds = step_seeds(self.config.train.seed, step, self.config.env.groups_per_step)
        batch = self.training.play(seeds)
        self._metrics = agent_metrics(batch, "rollout")
        return batch.trajectories

    def metrics(self) -> dict[str, float]:
        """The last step's ``rollout/`` metrics, the agents' failures among them."""
        return dict(self._metrics)

    def evaluate(self, version: int) -> dict[str, float]:
        """The agent, greedy, on the held-out seeds ``0 .. train.eval_groups - 1``."""
        seeds = list(range(self.config.train.eval_groups))
        return agent_metrics(self.evaluation.play(seeds, greedy=True), "eval")

    def push_weights(self, state_dict: Any, version: int) -> None:
        """Loads the policy's new weights into the served engine."""
        self.gateway.update_weights(state_dict, version)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def shutdown(self) -> None:
        """Stops the gateway and the engine's thread (the generator is the pipeline's)."""
        self.gateway.close()
        self.engine.close()
