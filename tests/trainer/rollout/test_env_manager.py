"""The env manager with a real (tiny, random) model: token in, token out, groups, windows."""

from __future__ import annotations

import copy

import pytest

from rollenv.policies import oracle_for
from trainer.generation import GenerationOutput, HFGenerator, SamplingParams
from trainer.models import load_model
from trainer.rollout.chat_tokens import ChatTokens
from trainer.rollout.env_manager import EnvManager


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


class Recording:
    """A generator proxy that keeps every prompt and output it passed on."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def generate(self, prompts, params):
        outputs = self.inner.generate(prompts, params)
        self.calls.append(([list(p) for p in prompts], outputs))
        return outputs

    def update_weights(self, state_dict):
        self.inner.update_weights(state_dict)


def _manager(tiny, **kwargs):
    model, tokenizer = tiny
    generator = Recording(HFGenerator(model, tokenizer))
    sampling = SamplingParams(max_new_tokens=12, stop_token_ids=(tokenizer.eos_token_id,), seed=1)
    settings = {"group_size": 3, "max_turns": 3, "sampling": sampling} | kwargs
    return EnvManager("Sokoban-v0", tokenizer, generator, **settings), generator


def test_full_context_keeps_the_exact_sampled_ids(tiny):
    manager, generator = _manager(tiny, context="full")
    trajectories = manager.rollout(seeds=[5, 6])
    assert len(trajectories) == 6
    assert [t.group_id for t in trajectories] == [0, 0, 0, 1, 1, 1]
    for trajectory in trajectories:
        assert len(trajectory.samples) == 1 and trajectory.finish_reason
        sample = trajectory.samples[0]
        sampled = [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if m]
        # what the generator returned for this episode, turn after turn
        # (group members share their first prompt: an episode's own reply is the one its
        # sequence continues with)
        replies = []
        for prompts, outputs in generator.calls:
            for prompt, output in zip(prompts, outputs, strict=True):
                start, end = len(prompt), len(prompt) + len(output.token_ids)
                if (
                    sample.token_ids[:start] == prompt
                    and sample.token_ids[start:end] == output.token_ids
                ):
                    replies += output.token_ids
                    assert sample.logprobs[start:end] == pytest.approx(output.logprobs)
                    break
        assert sampled == replies
        turns = {t for t in sample.turn_of_token if t >= 0}
        assert turns == set(range(len(trajectory.turns)))


def test_group_members_start_from_the_same_state(tiny):
    manager, _ = _manager(tiny)
    trajectories = manager.rollout(seeds=[11, 12])
    starts = [t.anchors_start[0] for t in trajectories]
    assert starts[0] == starts[1] == starts[2] and starts[3] == starts[4] == starts[5]
    assert starts[0] != starts[3]


def test_full_context_tokens_match_the_chat_template(tiny):
    _, tokenizer = tiny
    manager, _ = _manager(tiny, context="full", group_size=1, max_turns=10)
    trajectory = manager.rollout(seeds=[3], policy=oracle_for)[0]
    assert trajectory.finish_reason == "terminated" and len(trajectory.turns) >= 2
    messages = manager._envs[0].messages[:-1]  # the last observation came after the end
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    # built turn by turn, the sequence reads exactly as the template renders the whole chat
    assert tokenizer.decode(trajectory.samples[0].token_ids) == rendered.removesuffix("\n")


def test_window_context_has_one_sample_per_turn_and_a_bounded_prompt(tiny):
    model, tokenizer = tiny
    manager, _ = _manager(tiny, context="window", window=1, group_size=2, max_turns=4)
    trajectories = manager.rollout(seeds=[2])
    for trajectory in trajectories:
        assert len(trajectory.samples) == len(trajectory.turns)
        for turn, sample in enumerate(trajectory.samples):
            assert {t for t in sample.turn_of_token if t >= 0} == {turn}
            prompt = tokenizer.decode(
                [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if not m]
            )
            assert prompt.count("<|im_start|>assistant") <= 2  # one kept turn + the open one


def test_oracle_replies_solve_every_episode(tiny):
    manager, _ = _manager(tiny, group_size=1, max_turns=10)
    trajectories = manager.rollout(seeds=list(range(8)), policy=oracle_for)
    assert all(t.success for t in trajectories)
    assert all(turn.metrics["action_is_valid"] for t in trajectories for turn in t.turns)


def test_chat_tokens_close_a_cut_reply(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    after_stop = tokenizer.decode(chat.next_turn("obs", reply_ended_turn=True))
    after_cut = tokenizer.decode(chat.next_turn("obs", reply_ended_turn=False))
    assert after_cut == "<|im_end|>" + after_stop
    assert after_stop == "\n<|im_start|>user\nobs<|im_end|>\n<|im_start|>assistant\n"


def test_stepping_envs_in_threads_plays_the_same_episodes(tiny):
    serial, _ = _manager(tiny)
    threaded, _ = _manager(tiny, step_threads=6)
    expected, got = serial.rollout(seeds=[3, 4]), threaded.rollout(seeds=[3, 4])
    assert [t.samples[0].token_ids for t in got] == [t.samples[0].token_ids for t in expected]
    assert [[turn.reward for turn in t.turns] for t in got] == [
        [turn.reward for turn in t.turns] for t in expected
    ]


def test_play_episode_plays_what_a_one_episode_rollout_plays(tiny):
    import asyncio

    manager, generator = _manager(tiny, group_size=1)
    [expected] = manager.rollout(seeds=[8])

    async def reply(prompt, params):
        return generator.inner.generate([prompt], params)[0]

    fresh, _ = _manager(tiny, group_size=1)
    played = asyncio.run(fresh.play_episode(fresh.start_episode(8, group_id=0), reply))
    assert played.seed == 8 and played.finish_reason == expected.finish_reason
    assert played.samples[0].token_ids == expected.samples[0].token_ids
    assert played.samples[0].logprobs == expected.samples[0].logprobs
    assert [t.reward for t in played.turns] == [t.reward for t in expected.turns]


class CountingStream:
    """A continuous generator whose streams count the requests running at each step."""

    def __init__(self, inner):
        self.inner, self.max_batch_size, self.running = inner, inner.max_batch_size, []

    def stream(self, params):
        stream = self.inner.stream(params)
        step = stream.step

        def counted_step():
            finished = step()
            self.running.append(stream.running + len(finished))
            return finished

        stream.step = counted_step
        return stream


@pytest.mark.parametrize("context", ["full", "window"])
def test_the_continuous_schedule_plays_the_lockstep_episodes(tiny, context):
    # greedy: the same episodes whatever the schedule; 7 groups of 2 through 4 places in flight,
    # so groups start as others end, and every trajectory is handed on once, as it ends
    from trainer.generation import ContinuousGenerator

    model, tokenizer = tiny
    sampling = SamplingParams(
        max_new_tokens=12, temperature=0.0, stop_token_ids=(tokenizer.eos_token_id,)
    )
    settings = {"group_size": 2, "max_turns": 3, "sampling": sampling, "context": context}
    seeds = [3, 4, 5, 6, 7, 8, 9]
    lockstep = EnvManager("Sokoban-v0", tokenizer, HFGenerator(model, tokenizer), **settings)
    expected = lockstep.rollout(seeds)
    generator = CountingStream(
        ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=4)
    )
    manager = EnvManager(
        "Sokoban-v0", tokenizer, generator, schedule="continuous", episodes_in_flight=5, **settings
    )
    handed_on = []
    got = manager.rollout(seeds, on_trajectory=handed_on.append)
    assert [(t.seed, t.group_id) for t in got] == [(t.seed, t.group_id) for t in expected]
    assert [[s.token_ids for s in t.samples] for t in got] == [
        [s.token_ids for s in t.samples] for t in expected
    ]
    assert [[turn.reward for turn in t.turns] for t in got] == [
        [turn.reward for turn in t.turns] for t in expected
    ]
    assert sorted(map(id, handed_on)) == sorted(map(id, got))
    # 5 in flight rounds down to 2 groups of 2: never more than 4 envs, 4 requests at a time
    assert len(manager._envs) == 4 and max(generator.running) == 4


def test_the_continuous_schedule_needs_a_stream(tiny):
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="needs a generator with a stream.*lockstep"):
        EnvManager("Sokoban-v0", tokenizer, HFGenerator(model, tokenizer), schedule="continuous")
    with pytest.raises(ValueError, match="'lockstep' or 'continuous'"):
        EnvManager("Sokoban-v0", tokenizer, None, schedule="async")


class Scripted:
    """A generator that replies with the same token ids to every prompt (and keeps them)."""

    def __init__(self, token_ids):
        self.token_ids = token_ids
        self.prompts = []

    def generate(self, prompts, params):
        self.prompts += [list(p) for p in prompts]
        return [GenerationOutput(list(self.token_ids), [-0.5] * len(self.token_ids), "stop")]


@pytest.mark.parametrize("context", ["full", "window"])
def test_a_reply_prefix_ends_each_prompt_and_starts_the_reply_the_env_reads(tiny, context):
    _, tokenizer = tiny
    prefix = tokenizer.encode("<answer>", add_special_tokens=False)
    # what a generator stopped by "</answer>" returns: its last token may carry more text
    generated = tokenizer.encode("3 + 4</answer>\nThat is all.", add_special_tokens=False)
    generator = Scripted(generated)
    sampling = SamplingParams(max_new_tokens=24, stop=("</answer>",))
    manager = EnvManager(
        "Countdown-v0", tokenizer, generator, group_size=1, max_turns=1, context=context,
        sampling=sampling, reply_prefix="<answer>",
    )  # fmt: skip
    [trajectory] = manager.rollout(seeds=[0])
    [prompt] = generator.prompts
    assert prompt[-len(prefix) :] == prefix
    assert tokenizer.decode(prompt).endswith("<|im_start|>assistant\n<answer>")
    [turn] = trajectory.turns
    assert turn.reply == "<answer>3 + 4</answer>"  # the prefix, then the text up to the stop
    assert turn.metrics["action_is_valid"]  # strict: the text after the stop string is gone
    [sample] = trajectory.samples
    trained = [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if m]
    assert trained == generated  # the prefix is prompt, never trained
    assert sample.token_ids[: len(prompt)] == prompt
    # without the prefix the same reply has no opening tag: not an answer
    plain = EnvManager(
        "Countdown-v0", tokenizer, Scripted(generated), group_size=1, max_turns=1,
        context=context, sampling=sampling,
    )  # fmt: skip
    assert not plain.rollout(seeds=[0])[0].turns[0].metrics["action_is_valid"]
