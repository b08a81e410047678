"""What a batch of episodes did: success, validity, turns, returns and token counts."""

from __future__ import annotations

import numpy as np

from trainer.rollout.trajectory import Trajectory

__all__ = ["rollout_metrics"]


def rollout_metrics(trajectories: list[Trajectory], prefix: str) -> dict[str, float]:
    """Success, validity, effectiveness, turns, reward and token counts of some episodes.

    Success and return are over the scored episodes; ``unscored`` is the share the reward
    workers could not score."""
    scored = [t for t in trajectories if t.unscored is None] or trajectories
    turns = [turn for t in trajectories for turn in t.turns]
    n_turns = max(len(turns), 1)
    finish: dict[str, int] = {}
    for t in trajectories:
        finish[t.finish_reason] = finish.get(t.finish_reason, 0) + 1
    metrics = {
        f"{prefix}/success": float(np.mean([t.success for t in scored])),
        f"{prefix}/return": float(np.mean([t.episode_return for t in scored])),
        f"{prefix}/unscored": sum(t.unscored is not None for t in trajectories) / len(trajectories),
        f"{prefix}/turns": float(np.mean([len(t.turns) for t in trajectories])),
        f"{prefix}/valid_action_rate": sum(x.metrics["action_is_valid"] for x in turns) / n_turns,
        f"{prefix}/effective_action_rate": sum(x.metrics["action_is_effective"] for x in turns)
        / n_turns,
        f"{prefix}/response_tokens_per_turn": sum(x.response_tokens for x in turns) / n_turns,
        f"{prefix}/prompt_tokens_per_turn": sum(x.prompt_tokens for x in turns) / n_turns,
    }
    for reason, count in finish.items():
        metrics[f"{prefix}/finished_{reason}"] = count / len(trajectories)
    by_env: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        by_env.setdefault(t.env_id, []).append(t)
    if len(by_env) > 1:  # a mix of envs (env.mix): each member's share and results
        for env_id, mine in sorted(by_env.items()):
            mine_scored = [t for t in mine if t.unscored is None] or mine
            metrics[f"{prefix}/{env_id}/success"] = float(np.mean([t.success for t in mine_scored]))
            metrics[f"{prefix}/{env_id}/return"] = float(
                np.mean([t.episode_return for t in mine_scored])
            )
            metrics[f"{prefix}/{env_id}/episodes"] = float(len(mine))
    return metrics
