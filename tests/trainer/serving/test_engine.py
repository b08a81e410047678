"""``ServingEngine``: requests join the running batch at the next pass, wait their turn with a
deadline, leave when their caller does, and all end cleanly when the server stops."""

from __future__ import annotations

import asyncio
import copy

import pytest

pytest.importorskip("torch")

from trainer.generation import SamplingParams  # noqa: E402
from trainer.generation.continuous import ContinuousGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.serving.engine import Draining, Finished, Refused, ServingEngine, Token  # noqa: E402

LONG = SamplingParams(max_new_tokens=400, temperature=0.0, stop_token_ids=())
SHORT = SamplingParams(max_new_tokens=4, temperature=0.0, stop_token_ids=())


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


def _engine(tiny, **options) -> ServingEngine:
    model, tokenizer = tiny
    seqs = options.pop("max_batch_size", 4)
    generator = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=seqs)
    return ServingEngine(generator, max_step_tokens=64, **options)


async def _first_token(request):
    events = request.events()
    first = await anext(events)
    assert isinstance(first, Token)
    return events


async def _end(events):
    tokens = []
    async for event in events:
        if isinstance(event, Token):
            tokens.append(event.token_id)
        else:
            return event, tokens
    raise AssertionError("no end event")


def test_a_short_request_joins_while_a_long_one_runs(tiny):
    engine = _engine(tiny)

    async def scenario():
        alone = await _end(engine.submit([5, 6, 7], SHORT).events())
        long = engine.submit([1, 2, 3], LONG)
        long_events = await _first_token(long)
        short = await _end(engine.submit([5, 6, 7], SHORT).events())
        running_long = not long.done and long.finished_at is None
        rest = await _end(long_events)
        return alone, short, running_long, rest

    try:
        alone, short, running_long, (long_end, _) = asyncio.run(scenario())
    finally:
        engine.close()
    assert running_long  # the short one ended while the long one still ran
    assert isinstance(short[0], Finished) and short[0].output.token_ids == alone[0].output.token_ids
    assert short[1] == short[0].output.token_ids  # its tokens came one by one
    assert len(long_end.output.token_ids) == 400


def test_a_request_that_waits_past_the_queue_timeout_is_refused_with_503(tiny):
    engine = _engine(tiny, max_batch_size=1, queue_timeout_s=0.3)

    async def scenario():
        long = engine.submit([1, 2, 3], LONG)
        events = await _first_token(long)
        refused = await _end(engine.submit([4, 5], SHORT).events())
        engine.abort(long)
        return refused, await _end(events)

    try:
        (refused, tokens), (aborted, _) = asyncio.run(scenario())
    finally:
        engine.close()
    assert isinstance(refused, Refused) and refused.status == 503 and tokens == []
    assert "waited 0.3 s" in refused.message and "--max-num-seqs" in refused.message
    assert isinstance(aborted, Finished) and aborted.output.finish_reason == "abort"
    assert 1 <= len(aborted.output.token_ids) < 400


def test_an_aborted_request_frees_its_sequence_for_the_next(tiny):
    engine = _engine(tiny, max_batch_size=1, queue_timeout_s=30)

    async def scenario():
        first = engine.submit([1, 2, 3], LONG)
        await _first_token(first)
        second = engine.submit([4, 5], SHORT)
        engine.abort(first)  # its caller went away
        return await _end(second.events())

    try:
        end, tokens = asyncio.run(scenario())
    finally:
        engine.close()
    assert isinstance(end, Finished) and end.output.finish_reason == "length"
    assert len(tokens) == 4
    assert engine.stats.finished == {"abort": 1, "length": 1}


def test_stopping_refuses_new_requests_and_ends_the_running_ones(tiny):
    engine = _engine(tiny, max_batch_size=1, queue_timeout_s=30)

    async def scenario():
        running = engine.submit([1, 2, 3], LONG)
        events = await _first_token(running)
        waiting = engine.submit([4, 5], SHORT)
        engine.drain()
        with pytest.raises(Draining):
            engine.submit([6], SHORT)
        engine.abort_all()
        return await _end(events), await _end(waiting.events())

    try:
        (ended, _), (refused, _) = asyncio.run(scenario())
    finally:
        engine.close()
    assert engine.draining
    assert isinstance(ended, Finished) and ended.output.finish_reason == "abort"
    assert isinstance(refused, Refused) and refused.status == 503


def test_an_engine_fault_fails_the_requests_in_flight_and_the_engine_goes_on(tiny):
    engine = _engine(tiny)
    forward = engine.generator._forward
    calls = []

    def failing_once(*args):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return forward(*args)

    engine.generator._forward = failing_once

    async def scenario():
        failed = await _end(engine.submit([1, 2, 3], SHORT).events())
        after = await _end(engine.submit([1, 2, 3], SHORT).events())
        return failed, after

    try:
        (failed, _), (after, tokens) = asyncio.run(scenario())
    finally:
        engine.close()
    assert isinstance(failed, Refused) and failed.status == 500
    assert "RuntimeError: out of memory" in failed.message
    assert isinstance(after, Finished) and len(tokens) == 4


def test_bad_requests_are_refused_before_they_are_queued(tiny):
    engine = _engine(tiny)

    async def scenario():
        with pytest.raises(ValueError, match="empty"):
            engine.submit([], SHORT)
        with pytest.raises(ValueError, match="exceed the context of 2048"):
            engine.submit([1] * 2000, SamplingParams(max_new_tokens=100))
        refused = await _end(engine.submit([10**7], SHORT).events())
        return refused

    try:
        refused, _ = asyncio.run(scenario())
    finally:
        engine.close()
    assert isinstance(refused, Refused) and refused.status == 400
    assert "outside the vocabulary" in refused.message


def test_new_weights_reach_a_running_request_from_its_next_token_and_its_row_is_not_reused(tiny):
    engine = _engine(tiny)
    other, _ = load_model("tiny-random", seed=1)
    prompt = [1, 2, 3]

    async def scenario():
        long = engine.submit(prompt, LONG)
        events = long.events()
        versions = []
        async for event in events:
            if not isinstance(event, Token):
                return event, versions
            versions.append(event.weight_version)
            if len(versions) == 5:  # the engine loads them between two passes
                await asyncio.to_thread(engine.update_weights, other.state_dict(), 7)
        raise AssertionError("no end event")

    try:
        end, versions = asyncio.run(scenario())
        cache = engine.generator.cache
        cached = cache.cached_length(prompt + end.output.token_ids)
    finally:
        engine.close()
    assert isinstance(end, Finished) and len(end.output.token_ids) == 400
    switched = versions.index(7)
    assert 5 <= switched < 400 and set(versions[:switched]) == {0}
    assert set(versions[switched:]) == {7}
    assert cached == 0  # its keys and values were partly the old weights': not kept for reuse
