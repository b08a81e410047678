"""Self-play: the policy in every seat of a game, each seat an episode, grouped per seat."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("textarena")

from rollenv.seat_policies import RandomSeatPolicy  # noqa: E402
from trainer.generation import GenerationOutput, HFGenerator, SamplingParams  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.rollout.self_play import SelfPlayManager  # noqa: E402

TIC_TAC_TOE = "textarena/TicTacToe-v0"


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


class FirstFreeCell:
    """A scripted policy as a generator: reads the last board in the prompt and answers its
    first free cell, the reply closed with the end-of-turn token."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.prompts: list[str] = []

    def generate(self, prompts, params):
        outputs = []
        for prompt in prompts:
            text = self.tokenizer.decode(prompt)
            self.prompts.append(text)
            moves = re.findall(r"Available Moves: ([^\n]*)", text)
            cell = re.findall(r"\[(\d)\]", moves[-1])[0]
            ids = self.tokenizer.encode(f"<answer>[{cell}]</answer>", add_special_tokens=False)
            ids.append(self.tokenizer.eos_token_id)
            outputs.append(GenerationOutput(ids, [-0.5] * len(ids), "stop"))
        return outputs


def test_both_seats_play_one_game_and_each_gets_its_own_result_on_its_last_reply(tiny):
    _, tokenizer = tiny
    generator = FirstFreeCell(tokenizer)
    manager = SelfPlayManager(TIC_TAC_TOE, tokenizer, generator, group_size=1, max_turns=9)
    first, second = manager.rollout([0])
    # the first free cell each time: O takes 0, 2, 4, 6 (a diagonal), X takes 1, 3, 5
    assert [t.reply for t in first.turns] == [f"<answer>[{c}]</answer>" for c in (0, 2, 4, 6)]
    assert [t.reply for t in second.turns] == [f"<answer>[{c}]</answer>" for c in (1, 3, 5)]
    assert first.step_rewards == [0.0, 0.0, 0.0, 1.0] and second.step_rewards == [0.0, 0.0, -1.0]
    assert (first.success, second.success) == (True, False)
    assert first.finish_reason == second.finish_reason == "terminated"
    assert manager.last_results == [1.0, -1.0]
    assert (first.group_id, second.group_id) == (0, 1)  # one group per seat
    # each seat's sample trains on its own replies only, with the log-probs they came with
    for trajectory in (first, second):
        [sample] = trajectory.samples
        trained = [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if m]
        replies = "".join(t.reply for t in trajectory.turns)
        assert tokenizer.decode(trained, skip_special_tokens=True) == replies
        assert {lp for lp, m in zip(sample.logprobs, sample.loss_mask, strict=True) if m} == {-0.5}
    # X was told O's move before its first reply
    x_first_prompt = generator.prompts[1]
    assert "Player 0 placed their symbol (O) in cell 0" in x_first_prompt


def test_a_batch_holds_a_seat_of_every_game_and_groups_stay_per_seat(tiny):
    model, tokenizer = tiny
    calls = []
    generator = HFGenerator(model, tokenizer)
    real_generate = generator.generate

    def recording(prompts, params):
        calls.append(len(prompts))
        return real_generate(prompts, params)

    generator.generate = recording
    sampling = SamplingParams(max_new_tokens=6, stop_token_ids=(tokenizer.eos_token_id,), seed=1)
    manager = SelfPlayManager(
        TIC_TAC_TOE, tokenizer, generator, group_size=2, max_turns=2, sampling=sampling
    )
    trajectories = manager.rollout([5, 6], group_ids=[0, 1])
    assert len(trajectories) == 2 * 2 * 2  # seeds x games x seats
    assert calls == [4, 4]  # a reply in each of the 4 games in one call, twice
    assert [t.group_id for t in trajectories] == [0, 1, 0, 1, 2, 3, 2, 3]
    assert {t.seed for t in trajectories[:4]} == {5} and {t.seed for t in trajectories[4:]} == {6}
    # gibberish replies are penalised no-ops: player_0 keeps the move until its third reply
    # would pass max_turns, and player_1 never gets one
    for first, second in zip(trajectories[::2], trajectories[1::2], strict=True):
        assert first.finish_reason == second.finish_reason == "max_turns"
        assert len(first.turns) == 2 and first.episode_return == pytest.approx(2 * -0.1)
        assert second.turns == [] and second.samples == []


def test_seats_given_to_opponents_are_played_by_them_and_not_recorded(tiny):
    _, tokenizer = tiny
    manager = SelfPlayManager(
        TIC_TAC_TOE,
        tokenizer,
        FirstFreeCell(tokenizer),
        group_size=3,
        max_turns=9,
        opponents={"player_1": RandomSeatPolicy(seed=0)},
    )
    trajectories = manager.rollout([0])
    assert len(trajectories) == 3 and {t.group_id for t in trajectories} == {0}
    assert all(t.finish_reason == "terminated" for t in trajectories)
    assert all(r in (-1.0, 0.0, 1.0) for r in manager.last_results)
    with pytest.raises(ValueError, match="player_2"):
        SelfPlayManager(TIC_TAC_TOE, tokenizer, None, opponents={"player_2": RandomSeatPolicy()})
