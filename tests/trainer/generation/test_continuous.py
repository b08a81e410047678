"""``ContinuousGenerator`` samples what the reference implementation samples, and the trainer
recomputes the same log-probabilities (a mismatch would silently break PPO ratios).

The shared contract (stop tokens, allowed tokens, top-k/top-p, seeds, bad requests) is tested
for both in-process backends in ``test_hf.py``; here: batching, the reused cache and the real
model.
"""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rollenv.policies import oracle_for  # noqa: E402
from trainer.generation import ContinuousGenerator, HFGenerator, SamplingParams  # noqa: E402
from trainer.generation.kv_cache import SlotKVCache  # noqa: E402
from trainer.rollout.env_manager import EnvManager  # noqa: E402
from trainer.strategies.logprobs import sequence_logprobs  # noqa: E402

PROMPTS = [
    [1, 9690, 198, 28120, 905],
    [42],
    [1, 4093, 198] + list(range(1000, 1037)),
    [5, 6, 7, 8, 9, 10, 11, 12],
    [1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45],
]
#: How many of the oracle Sokoban prompts the bfloat16 test reads (see that test).
BFLOAT16_PROMPTS = 6


@pytest.fixture(scope="module")
def smollm2(load):
    return load("smollm2-135m")


@pytest.fixture(scope="module")
def smollm2_greedy(smollm2):
    """The oracle Sokoban prompts and the reference engine's 8-token greedy replies to them,
    computed once for the real-model tests (each such pass takes seconds on a CPU)."""
    model, tokenizer = smollm2
    prompts = _oracle_sokoban_prompts(tokenizer)
    reference = HFGenerator(copy.deepcopy(model), tokenizer, max_batch_size=16)
    greedy = reference.generate(prompts, SamplingParams(max_new_tokens=8, temperature=0.0))
    return prompts, [o.token_ids for o in greedy]


def _pair(model, tokenizer, max_batch_size=16):
    reference = HFGenerator(copy.deepcopy(model), tokenizer, max_batch_size=16)
    fast = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=max_batch_size)
    return reference, fast


def _trainer_logprobs(model, tokenizer, sequences, masks, temperature):
    logprobs, _ = sequence_logprobs(
        model,
        sequences,
        masks,
        pad_id=tokenizer.pad_token_id,
        token_budget=4096,
        temperature=temperature,
    )
    return logprobs


def _oracle_sokoban_prompts(tokenizer):
    """Every turn's prompt of 6 oracle SimpleSokoban episodes, in RL's full-context format."""
    manager = EnvManager("SimpleSokoban-v0", tokenizer, None, group_size=1, max_turns=3)
    prompts = []
    for trajectory in manager.rollout([1, 2, 3, 4, 5, 6], policy=oracle_for):
        [sample] = trajectory.samples
        for turn in sorted({t for t in sample.turn_of_token if t >= 0}):
            prompts.append(sample.token_ids[: sample.turn_of_token.index(turn)])
    return prompts


def _sampled_and_recomputed(generator, model, tokenizer, prompts):
    """Per prompt: the log-probs ``generator`` reported for its sampled reply, and the
    trainer's recomputation of them with ``model``."""
    sampled = generator.generate(prompts, SamplingParams(max_new_tokens=8, seed=0))
    sequences = [p + o.token_ids for p, o in zip(prompts, sampled, strict=True)]
    masks = [
        torch.tensor([0.0] * len(p) + [1.0] * len(o.token_ids))
        for p, o in zip(prompts, sampled, strict=True)
    ]
    recomputed = _trainer_logprobs(model, tokenizer, sequences, masks, 1.0)
    return [
        (torch.tensor(out.logprobs), trainer[mask > 0])
        for out, mask, trainer in zip(sampled, masks, recomputed, strict=True)
    ]


@pytest.mark.parametrize("max_batch_size", [16, 2, 1])
def test_greedy_replies_are_the_reference_replies(tiny, max_batch_size):
    # with a batch of 2 or 1, requests wait and take the rows of those that finish
    model, tokenizer = tiny
    reference, fast = _pair(model, tokenizer, max_batch_size)
    params = SamplingParams(max_new_tokens=12, temperature=0.0, stop_token_ids=(0,))
    expected = reference.generate(PROMPTS, params)
    got = fast.generate(PROMPTS, params)
    assert [o.token_ids for o in got] == [o.token_ids for o in expected]
    for a, b in zip(got, expected, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_a_later_turn_runs_only_its_new_tokens_and_replies_the_same(tiny):
    model, tokenizer = tiny
    reference, fast = _pair(model, tokenizer)
    params = SamplingParams(max_new_tokens=6, temperature=0.0)
    first = fast.generate(PROMPTS, params)
    turn2 = [p + o.token_ids + [77, 78, 79] for p, o in zip(PROMPTS, first, strict=True)]
    before = dict(fast.stats)
    got = fast.generate(turn2, params)
    computed = fast.stats["computed_prompt_tokens"] - before["computed_prompt_tokens"]
    # per prompt: the last reply token (sampled, never run) and the 3 new tokens
    assert computed == len(PROMPTS) * 4
    assert [o.token_ids for o in got] == [o.token_ids for o in reference.generate(turn2, params)]


def test_a_shared_prefix_is_copied_from_another_sequence(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer)
    params = SamplingParams(max_new_tokens=3, temperature=0.0)
    system = list(range(100, 140))
    fast.generate([system + [1, 2]], params)
    before = fast.stats["computed_prompt_tokens"]
    [out] = fast.generate([system + [7, 8, 9]], params)
    assert fast.stats["computed_prompt_tokens"] - before == 3
    [expected] = HFGenerator(copy.deepcopy(model), tokenizer).generate([system + [7, 8, 9]], params)
    assert out.token_ids == expected.token_ids


def test_a_prefix_several_prompts_share_is_computed_once(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer)
    params = SamplingParams(max_new_tokens=4, temperature=0.0)
    group = [list(range(200, 240))] * 4  # a group's identical first prompts
    others = [list(range(200, 230)) + [5, 6], list(range(200, 230)) + [7]]
    outputs = fast.generate(group + others, params)
    # the 39 tokens before each group prompt's last, then 1 token each; the others share 30
    assert fast.stats["computed_prompt_tokens"] == 39 + 4 * 1 + 2 + 1
    reference = HFGenerator(copy.deepcopy(model), tokenizer).generate(group + others, params)
    assert [o.token_ids for o in outputs] == [o.token_ids for o in reference]


def test_a_call_that_raised_leaves_no_half_written_rows(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        fast.generate([[1, 2, 3], [10**6]], SamplingParams(max_new_tokens=2))
    fast.cache.admit([1, 2, 3])  # as if an interrupted call had left a row running
    params = SamplingParams(max_new_tokens=6, temperature=0.0)
    expected = HFGenerator(copy.deepcopy(model), tokenizer).generate(PROMPTS, params)
    assert [o.token_ids for o in fast.generate(PROMPTS, params)] == [o.token_ids for o in expected]
    assert fast.cache.active == 0


def test_same_seed_draws_the_same_tokens_as_the_reference(tiny):
    # One prompt per call: both draw from one random stream in the same order, so equal
    # distributions give equal samples. "Equal" is up to float rounding (the engines sum in
    # different orders, ~1e-6 apart): a draw that lands within rounding of the boundary
    # between two tokens in the cumulative distribution may pick either neighbour. So the
    # replies must agree up to such a neighbour swap, if any (after it the contexts differ);
    # a wrong distribution moves a draw to an unrelated token, or its log-probs apart.
    model, tokenizer = tiny
    reference, fast = _pair(model, tokenizer)
    compared = drawn = 0
    for seed, prompt in enumerate(PROMPTS):
        params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=seed)
        [a] = fast.generate([prompt], params)
        [b] = reference.generate([prompt], params)
        same = next(
            (i for i, (x, y) in enumerate(zip(a.token_ids, b.token_ids, strict=False)) if x != y),
            len(b.token_ids),
        )
        if same < len(b.token_ids):
            assert abs(a.token_ids[same] - b.token_ids[same]) == 1, (seed, same)
        else:
            assert a.token_ids == b.token_ids
        assert a.logprobs[:same] == pytest.approx(b.logprobs[:same], abs=1e-4)
        compared, drawn = compared + same, drawn + len(b.token_ids)
    assert compared >= 0.75 * drawn


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_rollout_logprobs_are_what_the_trainer_recomputes(tiny, temperature):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer)
    manager = EnvManager(
        "Sokoban-v0",
        tokenizer,
        fast,
        group_size=3,
        max_turns=3,
        sampling=SamplingParams(max_new_tokens=10, temperature=temperature, seed=0),
    )
    trajectories = manager.rollout([11, 12])
    samples = [s for t in trajectories for s in t.samples]
    masks = [torch.tensor(s.loss_mask, dtype=torch.float32) for s in samples]
    recomputed = _trainer_logprobs(
        model, tokenizer, [s.token_ids for s in samples], masks, temperature
    )
    assert fast.stats["computed_prompt_tokens"] < fast.stats["prompt_tokens"]  # cache was used
    for sample, mask, trainer in zip(samples, masks, recomputed, strict=True):
        sampled = torch.tensor(sample.logprobs)[mask > 0]
        torch.testing.assert_close(sampled, trainer[mask > 0], atol=1e-4, rtol=0)


def test_the_real_model_matches_the_reference_and_the_trainer(smollm2, smollm2_greedy):
    # SmolLM2-135M on Sokoban prompts in RL's format, oracle replies as earlier turns
    model, tokenizer = smollm2
    prompts, expected = smollm2_greedy
    fast = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=4)
    greedy = SamplingParams(max_new_tokens=8, temperature=0.0)
    assert [o.token_ids for o in fast.generate(prompts, greedy)] == expected
    for sampled, trainer in _sampled_and_recomputed(fast, model, tokenizer, prompts):
        torch.testing.assert_close(sampled, trainer, atol=2e-3, rtol=0)


def test_bfloat16_weights_stay_close_to_the_float32_policy(smollm2, smollm2_greedy):
    # the contract of dtype="bfloat16": greedy replies part from float32's only at near-ties,
    # and log-probs within a few hundredths of the float32 trainer's (why RL with it
    # recomputes old log-probs)
    model, tokenizer = smollm2
    fast = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_batch_size=4, dtype="bfloat16")
    assert next(fast.model.model.layers.parameters()).dtype == torch.bfloat16
    assert fast.cache.keys[0].dtype == torch.bfloat16
    # 6 of the 16 prompts (every turn of the first two episodes, and one more): a CPU without
    # bfloat16 units emulates its matmuls, 28x slower than float32 here, and all 16 prompts
    # took 130 s of a CI run
    prompts, theirs = (part[:BFLOAT16_PROMPTS] for part in smollm2_greedy)
    ours = fast.generate(prompts, SamplingParams(max_new_tokens=8, temperature=0.0))
    same = 0
    for prompt, a, b in zip(prompts, [o.token_ids for o in ours], theirs, strict=True):
        if a == b:
            same += 1
            continue
        # a greedy reply may part from float32's only where float32 itself nearly ties
        at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
        with torch.no_grad():
            logits = model(torch.tensor([prompt + b[:at]])).logits[0, -1]
        logprobs = logits.float().log_softmax(-1)
        assert logprobs[b[at]] - logprobs[a[at]] < 0.5
    assert same >= len(prompts) // 2
    pairs = _sampled_and_recomputed(fast, model, tokenizer, prompts)
    error = torch.cat([sampled - trainer for sampled, trainer in pairs]).abs()
    assert error.mean() < 0.1
    assert error.max() < 1.0


def test_bfloat16_update_weights_rounds_the_new_policy(load):
    model0, tokenizer = load("tiny-random", 0)
    model1, _ = load("tiny-random", 1)
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    updated = ContinuousGenerator(model0, tokenizer, dtype="bfloat16")
    updated.generate(PROMPTS, params)
    updated.update_weights(model1.state_dict())
    fresh = ContinuousGenerator(copy.deepcopy(model1), tokenizer, dtype=torch.bfloat16)
    assert [o.token_ids for o in updated.generate(PROMPTS, params)] == [
        o.token_ids for o in fresh.generate(PROMPTS, params)
    ]
    for name, weight in updated.model.state_dict().items():
        torch.testing.assert_close(weight, fresh.model.state_dict()[name], atol=0, rtol=0)


def test_an_unknown_dtype_is_refused_with_the_allowed_ones(tiny):
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="dtype must be one of None, 'float32', 'bfloat16'"):
        ContinuousGenerator(copy.deepcopy(model), tokenizer, dtype="float16")


def test_update_weights_forgets_the_cache_and_switches_policy(tiny, load):
    model0, tokenizer = load("tiny-random", 0)
    model1, _ = load("tiny-random", 1)
    fast = ContinuousGenerator(model0, tokenizer)
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    fast.generate(PROMPTS, params)
    fast.update_weights(model1.state_dict())
    assert fast.cache.lengths == [0] * fast.cache.rows
    expected = HFGenerator(model1, tokenizer).generate(PROMPTS, params)
    assert [o.token_ids for o in fast.generate(PROMPTS, params)] == [o.token_ids for o in expected]


def test_unsupported_architectures_are_refused_with_the_way_out(tiny):
    model, tokenizer = tiny
    other = copy.deepcopy(model)
    other.config.model_type = "gpt2"
    with pytest.raises(ValueError, match="use the 'hf' backend"):
        ContinuousGenerator(other, tokenizer)


class TestSlotKVCache:
    def _cache(self, rows=3, capacity=4):
        return SlotKVCache(layers=2, rows=rows, kv_heads=1, head_dim=2, capacity=capacity)

    def _fill(self, cache, row, tokens):
        n = len(tokens)
        for layer in cache.keys:
            layer[row, 0, :n] = torch.tensor(tokens, dtype=torch.float32)[:, None]
        cache.write_tokens(torch.tensor([row] * n), torch.arange(n), torch.tensor(tokens))

    def test_running_rows_stay_contiguous_and_idle_rows_keep_their_tokens(self):
        cache = self._cache(rows=4)
        row_a, _ = cache.admit([1, 2, 3])
        self._fill(cache, row_a, [1, 2, 3])
        row_b, _ = cache.admit([4, 5])
        self._fill(cache, row_b, [4, 5])
        assert (row_a, row_b, cache.active) == (0, 1, 2)
        assert cache.release(0) == 1  # row 1 moved into row 0
        assert cache.active == 1 and cache.tokens[0, :2].tolist() == [4, 5]
        assert cache.tokens[1, :3].tolist() == [1, 2, 3]  # kept, idle
        assert cache.keys[1][1, 0, :3, 0].tolist() == [1.0, 2.0, 3.0]  # its keys moved with it
        row, shared = cache.admit([1, 2, 3, 9])
        assert (row, shared) == (1, 3)

    def test_a_prefix_of_a_running_row_is_copied_and_lru_rows_are_evicted(self):
        cache = self._cache(rows=3)
        row, _ = cache.admit([7, 8, 9])
        self._fill(cache, row, [7, 8, 9])
        row2, shared = cache.admit([7, 8, 1])  # row 0 runs: copy its [7, 8]
        assert (row2, shared) == (1, 2)
        assert cache.keys[0][1, 0, :2, 0].tolist() == [7.0, 8.0]
        assert cache.tokens[1, :3].tolist() == [7, 8, -1]

    def test_an_idle_row_with_its_own_tail_keeps_it_and_lends_its_prefix(self):
        from trainer.generation.kv_cache import KEPT_TAIL

        cache = self._cache(rows=4, capacity=64)
        long_tail = [1, 2, *range(100, 100 + KEPT_TAIL + 1)]  # 2 shared, then 33 of its own
        row, _ = cache.admit(long_tail)
        self._fill(cache, row, long_tail)
        cache.release(row)
        row, shared = cache.admit([1, 2, 9])
        assert shared == 2 and cache.tokens[row, :3].tolist() == [1, 2, -1]
        assert cache.keys[0][row, 0, :2, 0].tolist() == [1.0, 2.0]  # the prefix was copied
        # and the row it came from still holds every token, for a later prompt that shares them
        holders = [r for r in range(cache.active, cache.rows) if cache.lengths[r] == 35]
        assert len(holders) == 1
        assert cache.tokens[holders[0], :35].tolist() == long_tail
        cache.release(row)
        assert cache.admit([*long_tail, 7])[1] == 35

    def test_an_idle_row_a_prompt_continues_is_taken_in_place(self):
        from trainer.generation.kv_cache import KEPT_TAIL

        cache = self._cache(rows=4, capacity=64)
        turn = [1, 2, *range(100, 100 + KEPT_TAIL)]  # 2 shared, then 32: at most KEPT_TAIL
        row, _ = cache.admit(turn)
        self._fill(cache, row, turn)
        cache.release(row)
        row, shared = cache.admit([1, 2, 9])
        assert shared == 2
        assert not any(cache.lengths[r] == len(turn) for r in range(cache.rows))  # overwritten

    def test_the_whole_prompt_is_never_shared_and_rows_grow(self):
        cache = self._cache(rows=3, capacity=4)
        row, _ = cache.admit([1, 2])
        self._fill(cache, row, [1, 2])
        cache.release(row)
        assert cache.admit([1, 2]) == (0, 1)  # the last token is run again for its logits
        cache.release(0)
        row, shared = cache.admit(list(range(10)))
        assert cache.capacity >= 10 and all(k.shape[2] == cache.capacity for k in cache.keys)

    def test_rows_double_as_needed_and_jump_to_the_most_at_the_end(self):
        cache = self._cache(rows=40)
        assert cache.rows == 8 and cache.keys[0].shape[0] == 8
        sizes = []
        for i in range(39):
            row, _ = cache.admit([i])
            self._fill(cache, row, [i])
            sizes.append(cache.rows)
        # 8 -> 16 -> 40: doubling to 32 would leave 8 rows to go, fewer than the 16 it had
        assert sizes[:8] == [8] * 8 and sizes[8:16] == [16] * 8 and set(sizes[16:]) == {40}
        assert all(k.shape[0] == 40 for k in cache.keys + cache.values)
        assert cache.tokens[:39, 0].tolist() == list(range(39))  # nothing lost in the moves

    def test_misuse_is_refused(self):
        cache = self._cache(rows=2)
        cache.admit([1])
        with pytest.raises(RuntimeError, match="no idle row"):
            cache.admit([2])
        with pytest.raises(RuntimeError, match="while requests are running"):
            cache.clear()
        with pytest.raises(ValueError, match="not running"):
            cache.release(1)
        small = SlotKVCache(layers=1, rows=2, kv_heads=1, head_dim=1, capacity=2, max_capacity=4)
        with pytest.raises(ValueError, match="exceeds the model's context"):
            small.admit(list(range(5)))


@pytest.mark.parametrize("strict", [True, False])
def test_packed_weights_follow_full_and_partial_updates(load, strict):
    # 5 prompts decode on the 8-row pack; a stale pack would keep the old policy
    model0, tokenizer = load("tiny-random", 0)
    model1, _ = load("tiny-random", 1)
    fast = ContinuousGenerator(model0, tokenizer, packed_weights=True)
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    fast.generate(PROMPTS, params)
    assert 8 in fast._lm_head.packed_buckets
    state = model1.state_dict()
    if strict:
        fast.update_weights(state)
    else:  # a bucketed push: two halves
        names = list(state)
        fast.update_weights({n: state[n] for n in names[: len(names) // 2]}, strict=False)
        fast.update_weights({n: state[n] for n in names[len(names) // 2 :]}, strict=False)
    expected = HFGenerator(model1, tokenizer).generate(PROMPTS, params)
    assert [o.token_ids for o in fast.generate(PROMPTS, params)] == [o.token_ids for o in expected]


def test_packed_weights_are_refused_where_they_cannot_run(tiny):
    model, tokenizer = tiny
    with pytest.raises(ValueError, match="packed_weights needs float32"):
        ContinuousGenerator(copy.deepcopy(model), tokenizer, dtype="bfloat16", packed_weights=True)


def test_a_stream_admits_requests_while_others_run_and_replies_the_same(tiny):
    # requests submitted at different steps join the running batch (one forward pass decodes
    # the running ones and reads the new prompts) and get the replies a batch call gives
    model, tokenizer = tiny
    reference, fast = _pair(model, tokenizer, max_batch_size=3)
    params = SamplingParams(max_new_tokens=12, temperature=0.0, stop_token_ids=(0,))
    expected = reference.generate(PROMPTS, params)
    stream = fast.stream(params)
    stream.submit(PROMPTS[0], key=0)
    got, running, steps = {}, [], 0
    while stream.busy:
        if 1 <= steps <= 4:  # one more request per step, beside those running
            stream.submit(PROMPTS[steps], key=steps)
        for key, output in stream.step():
            got[key] = output
        running.append(stream.running)
        steps += 1
    assert [got[i].token_ids for i in range(len(PROMPTS))] == [o.token_ids for o in expected]
    for i, output in enumerate(expected):
        assert got[i].logprobs == pytest.approx(output.logprobs, abs=1e-4)
    assert max(running) == 3  # the batch was full while others waited
    assert steps < sum(len(o.token_ids) for o in expected)  # requests shared forward passes


def test_a_stream_ends_when_another_starts_and_refuses_bad_prompts(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer)
    params = SamplingParams(max_new_tokens=4, temperature=0.0)
    first = fast.stream(params)
    first.submit([1, 2, 3], key="a")
    first.step()
    fast.generate([[4, 5]], params)  # a call takes the engine over
    with pytest.raises(RuntimeError, match="stream was ended"):
        first.step()
    second = fast.stream(params)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        second.submit([10**6], key="b")
    with pytest.raises(ValueError, match="one key per prompt"):
        second.submit_many([[1], [2]], keys=["c"])
    with pytest.raises(ValueError, match="max_new_tokens >= 1"):
        fast.stream(SamplingParams(max_new_tokens=0))
    assert not second.busy and second.step() == []


def _run(stream, submissions=None):
    """Steps ``stream`` until idle; ``submissions[step]`` is called before that step.
    Returns the outputs by key and the number of tokens each forward pass ran."""
    engine = stream._engine
    passes = []
    forward = engine._forward

    def counting(rows, new_tokens, starts):
        passes.append(sum(len(t) for t in new_tokens))
        return forward(rows, new_tokens, starts)

    engine._forward = counting
    got, step = {}, 0
    try:
        while stream.busy or (submissions and step <= max(submissions)):
            if submissions and step in submissions:
                submissions[step]()
            got.update(stream.step())
            step += 1
    finally:
        del engine._forward
    return got, passes


def test_requests_with_their_own_sampling_get_what_they_would_alone(tiny):
    # a server's requests each bring their parameters: greedy, seeded and stopped differently
    # in one batch, each gets the reply it gets alone
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer, max_batch_size=4)
    asks = [
        (PROMPTS[0], SamplingParams(max_new_tokens=9, temperature=0.0)),
        (PROMPTS[2], SamplingParams(max_new_tokens=5, temperature=1.0, seed=7)),
        (PROMPTS[3], SamplingParams(max_new_tokens=7, temperature=0.7, top_k=20, seed=3)),
        (PROMPTS[4], SamplingParams(max_new_tokens=6, temperature=0.0, stop_token_ids=(45,))),
    ]
    alone = [fast.generate([prompt], params)[0] for prompt, params in asks]
    stream = fast.stream(SamplingParams(max_new_tokens=1))
    for key, (prompt, params) in enumerate(asks):
        stream.submit(prompt, key, params)
    got, _ = _run(stream)
    for key, expected in enumerate(alone):
        assert got[key].token_ids == expected.token_ids
        assert got[key].logprobs == pytest.approx(expected.logprobs, abs=1e-4)
        assert got[key].finish_reason == expected.finish_reason
    assert [len(got[k].token_ids) for k in range(3)] == [9, 5, 7]


def test_a_long_prompt_is_read_in_chunks_while_the_others_decode(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer, max_batch_size=4)
    params = SamplingParams(max_new_tokens=6, temperature=0.0)
    long_prompt = [1] + list(range(2000, 2300))
    expected = fast.generate([PROMPTS[0], long_prompt, PROMPTS[3]], params)
    fast.cache.clear()  # nothing cached: the stream reads every prompt
    stream = fast.stream(params, max_step_tokens=64)
    stream.submit(PROMPTS[0], "short")
    got, passes = _run(
        stream,
        {2: lambda: stream.submit(long_prompt, "long"), 3: lambda: stream.submit(PROMPTS[3], "b")},
    )
    assert max(passes) <= 64  # no pass ran more than the chunk
    assert sum(passes) >= len(long_prompt)  # the long prompt was read, over several passes
    for key, want in zip(["short", "long", "b"], expected, strict=True):
        assert got[key].token_ids == want.token_ids
        assert got[key].logprobs == pytest.approx(want.logprobs, abs=1e-4)
    # the short request kept decoding while the long prompt was read: it ended first
    assert list(got)[0] == "short"
    with pytest.raises(ValueError, match="must exceed max_batch_size"):
        fast.stream(params, max_step_tokens=4)


def test_an_aborted_request_frees_its_row_and_the_others_are_unchanged(tiny):
    model, tokenizer = tiny
    _, fast = _pair(model, tokenizer, max_batch_size=2)
    params = SamplingParams(max_new_tokens=10, temperature=0.0, stop_token_ids=())
    expected = fast.generate([PROMPTS[0], PROMPTS[3], PROMPTS[4]], params)
    stream = fast.stream(params, max_step_tokens=8)
    stream.submit(PROMPTS[0], "a")
    stream.submit(PROMPTS[1], "doomed")
    stream.submit(PROMPTS[3], "b")  # waits: two rows
    stream.submit(PROMPTS[4], "c")  # waits, then is aborted while its prompt is read
    stream.step()
    stream.step()
    assert stream.running == 2 and stream.is_waiting("b")
    partial = stream.abort("doomed")
    assert partial.finish_reason == "abort" and 1 <= len(partial.token_ids) < 10
    assert stream.running == 1
    stream.step()  # "b" takes the freed row
    assert not stream.is_waiting("b")
    got = {}
    while stream.is_waiting("c"):
        got.update(stream.step())
    # "c" was admitted with a prompt longer than the 8-token chunk: abort it mid-read
    assert stream.abort("c").token_ids == [] and stream.abort("c") is None
    assert stream.abort("never submitted") is None
    rest, _ = _run(stream)
    got.update(rest)
    assert set(got) == {"a", "b"}
    assert got["a"].token_ids == expected[0].token_ids
    assert got["b"].token_ids == expected[1].token_ids
    assert not stream.busy and fast.cache.active == 0


def test_a_request_ends_at_the_context_and_a_prompt_that_fills_it_is_refused(tiny):
    model, tokenizer = tiny
    fast = ContinuousGenerator(copy.deepcopy(model), tokenizer, max_context=24)
    stream = fast.stream(SamplingParams(max_new_tokens=1000, temperature=0.0, stop_token_ids=()))
    stream.submit(PROMPTS[3], "a")  # 8 tokens: 16 more fill the context
    got, _ = _run(stream)
    assert len(got["a"].token_ids) == 24 - len(PROMPTS[3])
    assert got["a"].finish_reason == "length"
    with pytest.raises(ValueError, match="no room for a reply in the model's context of 24"):
        stream.submit(list(range(100, 124)), "b")
    with pytest.raises(ValueError, match="unique"):
        stream.submit([1, 2], "c")
        stream.submit([3, 4], "c")
    with pytest.raises(ValueError, match=r"max_context must be in \[2, 2048\]"):
        ContinuousGenerator(copy.deepcopy(model), tokenizer, max_context=4096)


def test_a_preallocated_cache_never_grows(tiny):
    model, tokenizer = tiny
    fast = ContinuousGenerator(
        copy.deepcopy(model),
        tokenizer,
        max_batch_size=3,
        cache_rows=4,
        max_context=128,
        preallocate_cache=True,
    )
    keys = fast.cache.keys[0]
    assert tuple(keys.shape[:1]) == (4,) and keys.shape[2] == 128
    fast.generate(PROMPTS * 2, SamplingParams(max_new_tokens=20, temperature=0.0))
    assert fast.cache.keys[0].data_ptr() == keys.data_ptr()  # the same tensor: no growth


def test_constrained_replies_can_be_scored_under_the_distribution_they_were_drawn_from(tiny):
    # constrained decoding draws among the action words' tokens. The generator reports each
    # token's log-prob under the whole vocabulary; scored with the words as the vocabulary
    # (algorithm.score_actions_only), the log-probs of the words at a turn sum to 1 instead
    model, tokenizer = tiny
    from trainer.generation.from_config import action_token_ids

    allowed = action_token_ids(tokenizer, ("Up", "Down", "Left", "Right"))
    _, fast = _pair(model, tokenizer)
    params = SamplingParams(max_new_tokens=1, temperature=1.0, seed=0, allowed_token_ids=allowed)
    manager = EnvManager("Sokoban-v0", tokenizer, fast, group_size=2, max_turns=2, sampling=params)
    sample = manager.rollout([11])[0].samples[0]
    mask = torch.tensor(sample.loss_mask, dtype=torch.float32)
    turns = torch.nonzero(mask).squeeze(1).tolist()
    assert turns and all(sample.token_ids[i] in allowed for i in turns)

    def scored(vocabulary, word=None, at=None):
        """Log-probs at the turns, with ``word`` put at turn position ``at`` (causal: the
        distribution there depends on the tokens before it only)."""
        ids = list(sample.token_ids)
        if word is not None:
            ids[at] = word
        logprobs, _ = sequence_logprobs(
            model, [ids], [mask], pad_id=tokenizer.pad_token_id, token_budget=4096,
            vocabulary=vocabulary,
        )  # fmt: skip
        return logprobs[0][turns]

    whole = scored(None)
    torch.testing.assert_close(torch.tensor(sample.logprobs)[turns], whole, atol=1e-4, rtol=0)
    for k, at in enumerate(turns):
        each_word = torch.stack([scored(None, word, at)[k] for word in allowed])
        expected = whole[k] - torch.logsumexp(each_word, dim=0)
        torch.testing.assert_close(scored(allowed)[k], expected, atol=1e-5, rtol=0)
        among_words = torch.stack([scored(allowed, word, at)[k] for word in allowed])
        torch.testing.assert_close(among_words.exp().sum(), torch.tensor(1.0))


def test_asked_to_the_generator_reports_log_probs_among_the_allowed_tokens(tiny):
    model, tokenizer = tiny
    from trainer.generation.from_config import action_token_ids

    allowed = action_token_ids(tokenizer, ("Up", "Down", "Left", "Right"))
    _, fast = _pair(model, tokenizer)
    params = SamplingParams(
        max_new_tokens=1,
        temperature=0.7,
        seed=0,
        allowed_token_ids=allowed,
        logprobs_among_allowed=True,
    )
    manager = EnvManager("Sokoban-v0", tokenizer, fast, group_size=2, max_turns=2, sampling=params)
    sample = manager.rollout([11])[0].samples[0]
    mask = torch.tensor(sample.loss_mask, dtype=torch.float32)
    turns = torch.nonzero(mask).squeeze(1).tolist()
    assert turns
    expected, _ = sequence_logprobs(
        model, [sample.token_ids], [mask], pad_id=tokenizer.pad_token_id, token_budget=4096,
        vocabulary=allowed, temperature=0.7,
    )  # fmt: skip
    reported = torch.tensor(sample.logprobs)[turns]
    torch.testing.assert_close(reported, expected[0][turns], atol=1e-4, rtol=0)
    # and not the whole vocabulary's, which are far lower
    whole, _ = sequence_logprobs(
        model, [sample.token_ids], [mask], pad_id=tokenizer.pad_token_id, token_budget=4096,
        temperature=0.7,
    )  # fmt: skip
    assert bool((reported > whole[0][turns] + 1.0).all())


def test_a_token_outside_the_scoring_vocabulary_is_refused(tiny):
    model, tokenizer = tiny
    sequence = [1, 2, 3, 4]
    with pytest.raises(ValueError, match="not in the vocabulary it was sampled from"):
        sequence_logprobs(
            model, [sequence], [torch.tensor([0.0, 0.0, 1.0, 1.0])],
            pad_id=tokenizer.pad_token_id, token_budget=64, vocabulary=(3, 7),
        )  # fmt: skip
