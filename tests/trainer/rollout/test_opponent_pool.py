"""Self-play against past versions: the pool keeps and draws them, the manager seats one in the
last groups of a rollout, and a run trains against them."""

from __future__ import annotations

import collections
import re

import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("textarena")

from trainer.config import ConfigError, OpponentPoolConfig, load_config  # noqa: E402
from trainer.generation import GenerationOutput, HFGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.rollout.opponent_pool import OpponentPool  # noqa: E402
from trainer.rollout.self_play import SelfPlayManager  # noqa: E402
from trainer.training.pipeline import Pipeline  # noqa: E402

TIC_TAC_TOE = "textarena/TicTacToe-v0"


class FreeCell:
    """A scripted player as a generator: answers the first (or last) free cell of the last
    board in the prompt."""

    def __init__(self, tokenizer, last: bool = False):
        self.tokenizer = tokenizer
        self.last = last
        self.replies = 0

    def generate(self, prompts, params):
        outputs = []
        for prompt in prompts:
            moves = re.findall(r"Available Moves: ([^\n]*)", self.tokenizer.decode(prompt))
            cells = re.findall(r"\[(\d)\]", moves[-1])
            cell = cells[-1] if self.last else cells[0]
            ids = self.tokenizer.encode(f"<answer>[{cell}]</answer>", add_special_tokens=False)
            ids.append(self.tokenizer.eos_token_id)
            outputs.append(GenerationOutput(ids, [-0.5] * len(ids), "stop"))
        self.replies += len(prompts)
        return outputs


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


def test_the_last_groups_seat_the_past_version_and_the_policy_takes_each_seat_in_turn(tiny):
    _, tokenizer = tiny
    policy, past = FreeCell(tokenizer), FreeCell(tokenizer, last=True)
    manager = SelfPlayManager(TIC_TAC_TOE, tokenizer, policy, group_size=2, max_turns=9)
    trajectories = manager.rollout([0, 1], past_generator=past, past_groups=1)
    # group 0: two games of the policy against itself, both seats kept
    assert [t.group_id for t in trajectories[:4]] == [0, 1, 0, 1]
    # group 1: the policy as O against the past version's X, then as X against its O
    as_first, as_second = trajectories[4:]
    assert (as_first.group_id, as_second.group_id) == (2, 3)
    # O takes the first free cell (0, 1, 2: the top row) while X takes the last (8, 7)
    assert [t.reply for t in as_first.turns] == [f"<answer>[{c}]</answer>" for c in (0, 1, 2)]
    # the past O takes 8, 7, 6 (the bottom row) while the policy's X takes 0, 1
    assert [t.reply for t in as_second.turns] == [f"<answer>[{c}]</answer>" for c in (0, 1)]
    assert manager.last_past_results == [1.0, -1.0]
    assert past.replies == 2 + 3  # X's two moves in the first game, O's three in the second
    with pytest.raises(ValueError, match="multiple of 2"):
        SelfPlayManager(TIC_TAC_TOE, tokenizer, policy, group_size=3).rollout(
            [0], past_generator=past, past_groups=1
        )


def test_the_pool_keeps_every_nth_version_and_loads_the_drawn_one_into_its_generator(tiny):
    model, tokenizer = tiny
    generator = HFGenerator(load_model("tiny-random", seed=1)[0], tokenizer)
    pool = OpponentPool(OpponentPoolConfig(every=2, size=2), generator, seed=0)
    state = model.state_dict()
    for version in range(1, 6):
        pool.add(version, {k: v + version for k, v in state.items()})
    assert [past.version for past in pool.versions] == [2, 4]
    drawn = pool.draw(step=7)
    assert drawn is not None
    loaded = generator.model.state_dict()
    for name, value in state.items():
        torch.testing.assert_close(loaded[name], value + drawn.version)
    assert pool.groups(groups_per_step=4) == 2 and pool.groups(groups_per_step=1) == 1


def test_prioritised_draws_favour_the_version_the_policy_beats_least(tiny):
    model, tokenizer = tiny
    generator = HFGenerator(load_model("tiny-random", seed=1)[0], tokenizer)
    config = OpponentPoolConfig(every=1, size=2, choice="prioritised")
    pool = OpponentPool(config, generator)
    pool.add(1, model.state_dict())
    pool.add(2, model.state_dict())
    pool.record(pool.versions[0], [1.0] * 8)  # beaten every time: share 9/10, weight 0.01
    pool.record(pool.versions[1], [-1.0] * 8)  # never beaten: share 1/10, weight 0.81
    drawn = collections.Counter(pool.draw(step).version for step in range(2000))
    assert drawn[2] / 2000 == pytest.approx(0.81 / 0.82, abs=0.02)


def test_the_opponent_pool_needs_self_play():
    with pytest.raises(ConfigError, match="env.opponent_pool"):
        load_config(None, ["env.opponent_pool.every=2"])


def test_a_self_play_run_plays_its_past_versions_once_the_pool_holds_one(tmp_path):
    config = load_config(
        None,
        [
            "model.name=tiny-random",
            "model.lora=null",
            f"env.id={TIC_TAC_TOE}",
            "env.self_play=true",
            "env.group_size=2",
            "env.groups_per_step=2",
            "env.max_turns=2",
            "env.opponent_pool.every=1",
            "sampling.max_new_tokens=6",
            "train.eval_groups=1",
            "train.loggers=[jsonl]",
            "algorithm.skip_zero_advantage=false",
            f"train.output_dir={tmp_path}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    try:
        first = pipeline.train_step()
        second = pipeline.train_step()
    finally:
        pipeline.close()
    assert first["pool/versions"] == 0 and "pool/opponent_version" not in first
    assert second["pool/versions"] == 1 and second["pool/opponent_version"] == 1
    assert 0.0 <= second["pool/points_share"] <= 1.0
