"""``GeneratorActor`` batches requests that arrive together and never runs a cancelled one.
Driven in-process with asyncio (the Ray side is covered by the scheduler tests)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("torch")

from trainer.generation import ContinuousGenerator  # noqa: E402
from trainer.generation.actor import GeneratorActor  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402

PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10], [11, 12], [13, 14, 15]]


def test_requests_sent_together_run_as_one_batch_and_match_a_direct_call():
    server = GeneratorActor("tiny-random")
    greedy = SamplingParams(max_new_tokens=5, temperature=0.0)

    async def send():
        return await asyncio.gather(*(server.generate(p, greedy) for p in PROMPTS))

    outputs = asyncio.run(send())
    stats = asyncio.run(server.get_stats())
    assert stats["requests"] == len(PROMPTS)
    assert stats["batches"] == 1 and stats["largest_batch"] == len(PROMPTS)
    direct = ContinuousGenerator(*_tiny()).generate(PROMPTS, greedy)
    assert [o.token_ids for o in outputs] == [o.token_ids for o in direct]


def test_a_cancelled_request_is_never_run():
    server = GeneratorActor("tiny-random", batch_wait_s=0.05)
    params = SamplingParams(max_new_tokens=3, seed=0)

    async def send():
        kept = asyncio.ensure_future(server.generate([1, 2], params))
        dropped = asyncio.ensure_future(server.generate([3, 4], params))
        await asyncio.sleep(0)  # both queued, the batch not started
        dropped.cancel()
        return await kept, await asyncio.gather(dropped, return_exceptions=True)

    kept, [dropped] = asyncio.run(send())
    assert len(kept.token_ids) == 3
    assert isinstance(dropped, asyncio.CancelledError)
    stats = asyncio.run(server.get_stats())
    assert stats["cancelled"] == 1 and stats["largest_batch"] == 1


def test_update_weights_switches_the_policy_served_and_its_version_marks_each_token():
    server = GeneratorActor("tiny-random", seed=0)
    other = GeneratorActor("tiny-random", seed=1)
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
    before = asyncio.run(server.generate([1, 2, 3], greedy))
    target = asyncio.run(other.generate([1, 2, 3], greedy))
    state = other.generator.model.state_dict()
    assert asyncio.run(server.update_weights(state, version=4)) == 4
    after = asyncio.run(server.generate([1, 2, 3], greedy))
    assert before.token_ids != target.token_ids  # the two seeds give different policies
    assert after.token_ids == target.token_ids
    # each token says which weights sampled it
    assert before.weight_versions == [0] * len(before.token_ids)
    assert after.weight_versions == [4] * len(after.token_ids)


def _tiny():
    from trainer.models import load_model

    return load_model("tiny-random", seed=0)


def test_a_paused_actor_queues_requests_and_serves_them_on_resume():
    server = GeneratorActor("tiny-random", batch_wait_s=0.0)
    params = SamplingParams(max_new_tokens=2, seed=0)

    async def send():
        assert await server.pause() == 0
        waiting = asyncio.ensure_future(server.generate([1, 2], params))
        await asyncio.sleep(0.2)  # time for several batches, had it not been paused
        served_while_paused = (await server.get_stats())["batches"]
        assert not waiting.done()
        await server.resume()
        return served_while_paused, await waiting

    served_while_paused, output = asyncio.run(send())
    assert served_while_paused == 0
    assert len(output.token_ids) == 2
    assert asyncio.run(server.get_stats())["batches"] == 1
