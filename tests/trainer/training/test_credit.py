"""``assign_credit``: advantages land on the tokens of the turn they belong to."""

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.rollout.trajectory import Sample, Trajectory, Turn
from trainer.training.credit import assign_credit


def _turn(reward: float) -> Turn:
    return Turn(reply="", reward=reward, anchor="", metrics={}, prompt_tokens=0, response_tokens=0)


def _full_context_episode(rewards: list[float], anchors: list[str]) -> Trajectory:
    """One sample holding the whole episode: 2 observation tokens, then 2 reply tokens, per turn."""
    turn_of_token = [t for turn in range(len(rewards)) for t in (-1, -1, turn, turn)]
    sample = Sample(
        token_ids=list(range(len(turn_of_token))),
        loss_mask=[int(t >= 0) for t in turn_of_token],
        logprobs=[0.0] * len(turn_of_token),
        turn_of_token=turn_of_token,
    )
    return Trajectory(
        env_id="toy",
        seed=0,
        group_id=0,
        turns=[_turn(r) for r in rewards],
        samples=[sample],
        anchors_start=anchors,
    )


def test_gigpo_in_full_context_puts_each_turns_advantage_on_that_turns_reply():
    # both start in "s"; the winner moves to "a" then wins, the loser bumps (stays in "s") twice
    winner = _full_context_episode([0.0, 1.0], ["s", "a"])
    loser = _full_context_episode([0.0, 0.0], ["s", "s"])
    settings = AlgorithmConfig(name="gigpo", gamma=0.5, std_normalize=False)
    credit = assign_credit([winner, loser], torch.tensor([1.0, 0.0]), settings)

    # episode level: returns 1 and 0, +-0.5. Step level, R_t = r_t + 0.5 R_{t+1}:
    # anchor "s" holds the winner's first step (0.5) and both of the loser's (0, 0): mean 1/6;
    # anchor "a" holds one step: 0
    winner_steps = [0.5 + (0.5 - 1 / 6), 0.5]
    loser_steps = [-0.5 - 1 / 6, -0.5 - 1 / 6]
    for advantages, steps in zip(credit.advantages, (winner_steps, loser_steps), strict=True):
        expected = torch.tensor([v for step in steps for v in (0.0, 0.0, step, step)])
        torch.testing.assert_close(advantages, expected)


@pytest.mark.parametrize("name", ["starpo", "grpo"])
def test_episode_level_estimators_put_one_advantage_on_every_reply_token(name):
    winner = _full_context_episode([0.0, 1.0], ["s", "a"])
    loser = _full_context_episode([0.0, 0.0], ["s", "s"])
    settings = AlgorithmConfig(name=name, std_normalize=False)
    credit = assign_credit([winner, loser], torch.tensor([1.0, 0.0]), settings)
    mask = torch.tensor([0.0, 0.0, 1.0, 1.0] * 2)
    torch.testing.assert_close(credit.advantages[0], 0.5 * mask)
    torch.testing.assert_close(credit.advantages[1], -0.5 * mask)


def test_raft_reinforces_the_winner_and_leaves_the_loser_at_zero():
    winner = _full_context_episode([0.0, 1.0], ["s", "a"])
    loser = _full_context_episode([0.0, 0.0], ["s", "s"])
    settings = AlgorithmConfig(name="raft", std_normalize=False)
    credit = assign_credit([winner, loser], torch.tensor([1.0, 0.0]), settings)
    mask = torch.tensor([0.0, 0.0, 1.0, 1.0] * 2)
    torch.testing.assert_close(credit.advantages[0], 0.5 * mask)
    torch.testing.assert_close(credit.advantages[1], torch.zeros(8))
