"""Weights loaded between two decode steps of a running batch: ``keep_cache`` and
``recompute_prefix`` (``trainer.generation.in_flight_weights``), directly and through a
``GeneratorActor`` driven in-process with asyncio."""

from __future__ import annotations

import asyncio

import pytest

torch = pytest.importorskip("torch")

from trainer.generation import ContinuousGenerator  # noqa: E402
from trainer.generation.actor import GeneratorActor  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.in_flight_weights import decode_with_updates  # noqa: E402
from trainer.models import load_model  # noqa: E402

PROMPTS = [[1, 2, 3], [4, 5, 6, 7], [8, 9]]
GREEDY = SamplingParams(max_new_tokens=12, temperature=0.0, ignore_eos=True)
SWITCH_AT = 5  # decode steps under the old weights


def _engines(**engine_kwargs):
    old, tokenizer = load_model("tiny-random", seed=0)
    new, _ = load_model("tiny-random", seed=1)
    engine = ContinuousGenerator(old, tokenizer, **engine_kwargs)
    return engine, ContinuousGenerator(new, tokenizer), new


def _decode_switching(mode, prompts=PROMPTS, params=GREEDY, switch_at=SWITCH_AT, **engine_kwargs):
    """Greedy replies that switch from seed 0's weights to seed 1's (version 7) after
    ``switch_at`` decode steps; also returns an engine with seed 1's weights."""
    engine, fresh, new_model = _engines(**engine_kwargs)
    state = {"version": 0, "steps": 0}

    def load_pending():
        state["steps"] += 1
        if state["steps"] == switch_at + 1:
            engine.update_weights(new_model.state_dict())
            state["version"] = 7
            return True
        return False

    outputs = decode_with_updates(
        engine,
        prompts,
        params,
        version=lambda: state["version"],
        load_pending=load_pending,
        mode=mode,
    )
    return outputs, fresh


@pytest.mark.parametrize("mode", ["keep_cache", "recompute_prefix"])
def test_tokens_before_the_update_are_the_old_policy_s_and_each_records_its_version(mode):
    outputs, _ = _decode_switching(mode)
    old_engine, _, _ = _engines()
    before = old_engine.generate(PROMPTS, GREEDY)
    for output, old in zip(outputs, before, strict=True):
        assert len(output.token_ids) == GREEDY.max_new_tokens
        assert output.weight_versions == [0] * SWITCH_AT + [7] * (12 - SWITCH_AT)
        assert output.token_ids[:SWITCH_AT] == old.token_ids[:SWITCH_AT]
        assert output.logprobs[:SWITCH_AT] == pytest.approx(old.logprobs[:SWITCH_AT], abs=1e-4)


def test_recompute_prefix_samples_after_the_update_exactly_as_the_new_weights_would():
    outputs, fresh = _decode_switching("recompute_prefix")
    rest = SamplingParams(max_new_tokens=12 - SWITCH_AT, temperature=0.0, ignore_eos=True)
    for prompt, output in zip(PROMPTS, outputs, strict=True):
        [expected] = fresh.generate([prompt + output.token_ids[:SWITCH_AT]], rest)
        assert output.token_ids[SWITCH_AT:] == expected.token_ids
        assert output.logprobs[SWITCH_AT:] == pytest.approx(expected.logprobs, abs=1e-4)


@pytest.mark.parametrize("preallocate_cache", [False, True])
def test_recompute_prefix_on_long_ragged_prompts_and_a_queue_samples_as_the_new_weights(
    preallocate_cache,
):
    """Prompts of 1 to 1,500 tokens, more than the engine's batch (two wait in the queue when
    the weights arrive, and run wholly under the new ones), the cache grown or allocated up
    front: after the switch every reply goes on as the new weights would from its prefix."""
    generator = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(10, 40000, (length,), generator=generator).tolist()
        for length in (700, 1, 257, 1500, 33, 90)
    ]
    params = SamplingParams(max_new_tokens=40, temperature=0.0, ignore_eos=True)
    outputs, fresh = _decode_switching(
        "recompute_prefix",
        prompts,
        params,
        switch_at=17,
        max_batch_size=4,
        max_context=1600,
        preallocate_cache=preallocate_cache,
    )
    queued = 0
    for prompt, output in zip(prompts, outputs, strict=True):
        assert len(output.token_ids) == params.max_new_tokens
        old_tokens = output.weight_versions.count(0)
        assert output.weight_versions == [0] * old_tokens + [7] * (40 - old_tokens)
        queued += old_tokens == 0
        rest = SamplingParams(max_new_tokens=40 - old_tokens, temperature=0.0, ignore_eos=True)
        [expected] = fresh.generate([prompt + output.token_ids[:old_tokens]], rest)
        assert output.token_ids[old_tokens:] == expected.token_ids
        assert output.logprobs[old_tokens:] == pytest.approx(expected.logprobs, abs=1e-4)
    # four started under the old weights (the engine's batch), two waited for a free row
    assert queued == 2


def test_keep_cache_reads_the_old_cache_so_its_log_probs_differ_from_the_new_policy_s():
    kept, fresh = _decode_switching("keep_cache")
    # the new weights score the same tokens afresh (prompt and first tokens recomputed)
    differences = []
    for prompt, output in zip(PROMPTS, kept, strict=True):
        sequence = torch.tensor([prompt + output.token_ids])
        with torch.no_grad():
            logits = fresh.model(sequence).logits[0].float().log_softmax(-1)
        start = len(prompt) + SWITCH_AT
        for offset, token in enumerate(output.token_ids[SWITCH_AT:]):
            rescored = logits[start + offset - 1, token].item()
            differences.append(abs(rescored - output.logprobs[SWITCH_AT + offset]))
    # the first token after the update attends to keys the old weights computed
    assert max(differences) > 1e-3


def _sampling_began(server: GeneratorActor) -> bool:
    """Whether the actor's running batch has sampled a token."""
    stream = server.generator._stream
    return stream is not None and any(request.tokens for request in stream._running)


def test_an_actor_loads_weights_pushed_mid_batch_before_the_batch_ends():
    server = GeneratorActor("tiny-random", seed=0, in_flight_weights="keep_cache")
    other, _ = load_model("tiny-random", seed=1)
    long = SamplingParams(max_new_tokens=400, temperature=0.0, ignore_eos=True)
    order = []

    async def run():
        replies = asyncio.ensure_future(server.generate([1, 2, 3], long))
        while not _sampling_began(server):
            await asyncio.sleep(0.001)
        served = await server.update_weights(other.state_dict(), version=3)
        order.append(("loaded", replies.done()))
        return served, await replies

    served, output = asyncio.run(run())
    assert served == 3 and order == [("loaded", False)]
    versions = output.weight_versions
    assert versions[0] == 0 and versions[-1] == 3 and versions == sorted(versions)


def test_next_turn_is_the_only_mode_outside_the_continuous_backend():
    with pytest.raises(ValueError, match="only the continuous backend"):
        GeneratorActor("tiny-random", backend="hf", in_flight_weights="keep_cache")
    with pytest.raises(ValueError, match="choose one of"):
        GeneratorActor("tiny-random", in_flight_weights="sometimes")
