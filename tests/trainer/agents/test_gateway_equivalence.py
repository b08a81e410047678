"""An agent program written with the ``openai`` SDK, playing through the gateway, gives the same
token ids, rewards and training batch as the built-in env manager playing the same seeds with the
same policy (greedy, tiny-random): the gateway re-tokenises nothing the policy sampled."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from trainer.agents.agent_episodes import AgentEpisodes
from trainer.config import AlgorithmConfig
from trainer.generation import SamplingParams
from trainer.generation.continuous import ContinuousGenerator
from trainer.rollout.env_manager import EnvManager
from trainer.training.credit import assign_credit

pytest.importorskip("openai")

TURNS = 3
REPLY_TOKENS = 12


async def chat_agent(env, llm):
    """The env manager's full-context chat, written as any agent would write it."""
    obs, info = env.reset()
    messages = [
        {"role": "system", "content": info["instruction"]},
        {"role": "user", "content": obs},
    ]
    for _ in range(TURNS):
        reply = await llm.chat.completions.create(
            model="policy", messages=messages, temperature=0, max_tokens=REPLY_TOKENS
        )
        text = reply.choices[0].message.content
        obs, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            return
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"Reward: {reward:g}\n{obs}"},
        ]


def _trained_part(sample):
    """The sample up to its last trained token: after the last turn the env manager has also
    tokenised the prompt of a turn it never played (the gateway has no call for it)."""
    end = max(i for i, mask in enumerate(sample.loss_mask) if mask) + 1
    return (
        sample.token_ids[:end],
        sample.loss_mask[:end],
        sample.logprobs[:end],
        sample.turn_of_token[:end],
    )


def _one_group(trajectories):
    return [dataclasses.replace(t, group_id=0) for t in trajectories]


@pytest.mark.parametrize("env_id", ["Sokoban-v0", "FrozenLake-v0"])
def test_an_openai_sdk_agent_trains_on_what_the_env_manager_would(tiny, gateway, env_id):
    model, tokenizer = tiny
    seeds = [0, 1, 2]
    manager = EnvManager(
        env_id,
        tokenizer,
        ContinuousGenerator(model, tokenizer, max_batch_size=8),  # as the gateway's
        group_size=1,
        max_turns=TURNS,
        context="full",
        max_context_tokens=100_000,
        sampling=SamplingParams(
            max_new_tokens=REPLY_TOKENS, temperature=0, stop_token_ids=(tokenizer.eos_token_id,)
        ),
    )
    # one episode at a time on both sides: the same batch of one in every forward pass
    built_in = [manager.rollout([seed], group_ids=[i])[0] for i, seed in enumerate(seeds)]
    episodes = AgentEpisodes(chat_agent, env_id, gateway, group_size=1, concurrency=1)
    batch = episodes.play(seeds)
    assert batch.failures == {}
    through_gateway = batch.trajectories
    assert len(through_gateway) == len(built_in) == 3

    for ours, theirs in zip(through_gateway, built_in, strict=True):
        assert ours.step_rewards == theirs.step_rewards
        assert [t.reply for t in ours.turns] == [t.reply for t in theirs.turns]
        assert ours.anchors_start == theirs.anchors_start
        (sample,), (reference,) = ours.samples, theirs.samples
        ids, mask, logprobs, turns = _trained_part(sample)
        ref_ids, ref_mask, ref_logprobs, ref_turns = _trained_part(reference)
        assert ids == ref_ids
        assert mask == ref_mask
        assert turns == ref_turns
        assert logprobs == pytest.approx(ref_logprobs, abs=1e-5)

    # the training batch: the same advantages on the same tokens, GRPO and GiGPO alike. The
    # tiny model's replies all earn the same, so the three episodes are scored apart here and
    # put in one group, for advantages that are not all zero
    scores = torch.tensor([1.0, 0.0, 0.5])
    for name in ("grpo", "gigpo"):
        settings = AlgorithmConfig(name=name)
        ours = assign_credit(_one_group(through_gateway), scores, settings).advantages
        theirs = assign_credit(_one_group(built_in), scores, settings).advantages
        assert any(a.any() for a in ours)
        for a, b in zip(ours, theirs, strict=True):
            assert torch.equal(a, b[: len(a)])
            assert not b[len(a) :].any()
