"""Tests of the in-process backends (``HFGenerator``, and ``ContinuousGenerator`` through the
parametrised ``generator`` fixture) on the tiny random model, against plain full-forward
references."""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainer.generation import (  # noqa: E402
    GenerationOutput,
    Generator,
    HFGenerator,
    SamplingParams,
    make_generator,
)
from trainer.generation.hf import _draw, sample_next_tokens  # noqa: E402

# Prompts of different lengths (1 to 40 tokens), so batches need left padding.
PROMPTS = [
    [1, 9690, 198, 28120, 905],
    [42],
    [1, 4093, 198] + list(range(1000, 1037)),
    [5, 6, 7, 8, 9, 10, 11, 12],
    [1, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45],
]


@pytest.fixture(scope="module", params=["hf", "continuous"])
def generator(tiny, request):
    """Each in-process backend; both must honour the same contract."""
    model, tokenizer = tiny
    return make_generator(request.param, model, tokenizer, max_batch_size=16)


def _full_logits(model, ids: list[int]) -> torch.Tensor:
    """Logits at every position, one plain forward pass, no cache and no padding."""
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].float()


@functools.cache
def _reference_greedy(model, prompt, max_new_tokens, stop=(), allowed=None):
    """Greedy decoding by recomputing the whole sequence at every step (memoised: the model's
    weights must not change under it)."""
    ids, new = list(prompt), []
    for _ in range(max_new_tokens):
        logits = _full_logits(model, ids)[-1]
        if allowed is not None:
            mask = torch.full_like(logits, float("-inf"))
            mask[list(allowed)] = 0
            logits = logits + mask
        token = int(logits.argmax())
        ids.append(token)
        new.append(token)
        if token in stop:
            break
    return new


def _reference_logprobs(model, prompt, reply, temperature):
    logits = _full_logits(model, list(prompt) + list(reply))[len(prompt) - 1 : -1]
    scale = temperature if temperature > 0 else 1.0
    return (logits / scale).log_softmax(-1).gather(-1, torch.tensor(reply)[:, None]).squeeze(-1)


@pytest.mark.parametrize("max_batch_size", [16, 2, 1])
def test_greedy_matches_step_by_step_full_recomputation(tiny, max_batch_size):
    model, tokenizer = tiny
    generator = HFGenerator(model, tokenizer, max_batch_size=max_batch_size)
    params = SamplingParams(max_new_tokens=12, temperature=0.0, stop_token_ids=(0,))
    outputs = generator.generate(PROMPTS, params)
    assert len(outputs) == len(PROMPTS)
    for prompt, out in zip(PROMPTS, outputs, strict=True):
        assert isinstance(out, GenerationOutput)
        assert out.token_ids == _reference_greedy(model, tuple(prompt), 12, stop=(0,))
        assert out.finish_reason == "length" and len(out.token_ids) == 12
        expected = _reference_logprobs(model, prompt, out.token_ids, temperature=0)
        torch.testing.assert_close(torch.tensor(out.logprobs), expected, atol=1e-4, rtol=0)


def test_prompt_runs_once_then_one_token_per_step_with_left_pad_positions(tiny, monkeypatch):
    # RoPE attention is shift-invariant, so wrong positions would not change Llama's outputs:
    # check the positions and the cache use directly.
    model, tokenizer = tiny
    generator = HFGenerator(model, tokenizer)
    calls = []
    forward = model.forward

    def spy(*args, **kwargs):
        calls.append({k: kwargs[k] for k in ("input_ids", "attention_mask", "position_ids")})
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    prompts = [[1, 2, 3, 4, 5], [7, 8]]
    generator.generate(prompts, SamplingParams(max_new_tokens=3, stop_token_ids=(0,)))
    assert len(calls) == 3
    first = calls[0]
    assert first["input_ids"].tolist() == [[1, 2, 3, 4, 5], [2, 2, 2, 7, 8]]  # pad = eos = 2
    assert first["attention_mask"].tolist() == [[1, 1, 1, 1, 1], [0, 0, 0, 1, 1]]
    real = first["attention_mask"].bool()
    assert first["position_ids"][real].tolist() == [0, 1, 2, 3, 4, 0, 1]
    for step, call in enumerate(calls[1:], start=1):
        assert call["input_ids"].shape == (2, 1)  # the prompt is not recomputed
        assert call["position_ids"].tolist() == [[4 + step], [1 + step]]
        assert call["attention_mask"].shape == (2, 5 + step)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(max_new_tokens=16, temperature=1.0, seed=0),
        SamplingParams(max_new_tokens=16, temperature=0.7, top_k=50, top_p=0.9, seed=1),
        SamplingParams(max_new_tokens=16, temperature=1.3, top_p=0.5, seed=2),
    ],
    ids=["plain", "top-k-top-p", "hot-top-p"],
)
def test_sampled_logprobs_equal_full_forward_log_softmax(generator, tiny, params):
    model, _ = tiny
    for prompt, out in zip(PROMPTS, generator.generate(PROMPTS, params), strict=True):
        assert len(out.token_ids) == len(out.logprobs) > 0
        expected = _reference_logprobs(model, prompt, out.token_ids, params.temperature)
        torch.testing.assert_close(torch.tensor(out.logprobs), expected, atol=1e-4, rtol=0)


def test_allowed_token_ids_are_respected(generator, tiny):
    model, _ = tiny
    allowed = (28, 29, 30, 31)  # "=", ">", "?", "@": not favoured by the random model
    sampled = generator.generate(
        PROMPTS, SamplingParams(max_new_tokens=10, temperature=1.0, allowed_token_ids=allowed)
    )
    for prompt, out in zip(PROMPTS, sampled, strict=True):
        assert set(out.token_ids) <= set(allowed)
        # The reported log-probs are those of the full-vocabulary distribution.
        expected = _reference_logprobs(model, prompt, out.token_ids, 1.0)
        torch.testing.assert_close(torch.tensor(out.logprobs), expected, atol=1e-4, rtol=0)
        assert all(lp < -5 for lp in out.logprobs)  # renormalised, they would be near log(1/4)
    greedy = generator.generate(
        PROMPTS, SamplingParams(max_new_tokens=6, temperature=0.0, allowed_token_ids=allowed)
    )
    for prompt, out in zip(PROMPTS, greedy, strict=True):
        assert out.token_ids == _reference_greedy(model, tuple(prompt), 6, allowed=allowed)


def test_stop_token_ends_its_sequence_and_is_kept(generator, tiny):
    model, _ = tiny
    free = generator.generate(PROMPTS, SamplingParams(max_new_tokens=12, temperature=0.0))
    # Stop each prompt at a token its own greedy reply produces, so replies end at different
    # steps while the rest of the batch goes on.
    stop = tuple({out.token_ids[3] for out in free})
    stopped = generator.generate(
        PROMPTS, SamplingParams(max_new_tokens=12, temperature=0.0, stop_token_ids=stop)
    )
    for before, after in zip(free, stopped, strict=True):
        end = next(i for i, t in enumerate(before.token_ids) if t in stop)
        assert after.token_ids == before.token_ids[: end + 1]
        assert after.logprobs == pytest.approx(before.logprobs[: end + 1], abs=1e-5)
        assert after.finish_reason == "stop"
    assert len({len(out.token_ids) for out in stopped}) > 1 or len(stop) == 1


def test_a_stop_string_ends_the_reply_on_the_token_that_completes_it(generator, tiny):
    _, tokenizer = tiny
    free = generator.generate(PROMPTS, SamplingParams(max_new_tokens=12, temperature=0.0))
    # a stop string per prompt: the text of its own greedy reply's tokens 2-4, which starts
    # inside a token's text where it can; one string per prompt, all given to every prompt
    texts = [tokenizer.decode(out.token_ids[:5], skip_special_tokens=True) for out in free]
    starts = [len(tokenizer.decode(out.token_ids[:2], skip_special_tokens=True)) for out in free]
    stops = tuple(
        {text[max(start - 1, 0) :] for text, start in zip(texts, starts, strict=True)} - {""}
    )
    assert stops
    stopped = generator.generate(
        PROMPTS, SamplingParams(max_new_tokens=12, temperature=0.0, stop=stops)
    )
    ended = 0
    for before, after in zip(free, stopped, strict=True):
        # the first token whose text (special tokens left out), with the reply before it,
        # holds a stop string; a reply whose text never does runs to its length
        end = next(
            (
                n
                for n in range(1, len(before.token_ids) + 1)
                if any(
                    s in tokenizer.decode(before.token_ids[:n], skip_special_tokens=True)
                    for s in stops
                )
            ),
            None,
        )
        if end is None:
            assert after == before
            continue
        ended += 1
        assert after.token_ids == before.token_ids[:end]
        assert after.logprobs == pytest.approx(before.logprobs[:end], abs=1e-5)
        assert after.finish_reason == "stop"
    assert ended >= len(stops)  # each stop string ends at least the reply it came from
    with pytest.raises(ValueError, match="non-empty strings"):
        generator.generate(PROMPTS, SamplingParams(max_new_tokens=2, stop=("",)))


def test_eos_is_the_default_stop_token(generator, tiny):
    _, tokenizer = tiny
    eos = tokenizer.eos_token_id
    outs = generator.generate(
        PROMPTS, SamplingParams(max_new_tokens=5, temperature=1.0, allowed_token_ids=(eos,))
    )
    for out in outs:
        assert out.token_ids == [eos] and out.finish_reason == "stop"
    # A stop token sampled at the very last step still counts as a stop.
    [last] = generator.generate(
        [PROMPTS[0]], SamplingParams(max_new_tokens=1, allowed_token_ids=(eos,), seed=0)
    )
    assert last.token_ids == [eos] and last.finish_reason == "stop"


def test_max_new_tokens_is_respected(generator):
    for n in (0, 1, 7):
        outs = generator.generate(PROMPTS, SamplingParams(max_new_tokens=n, stop_token_ids=(0,)))
        for out in outs:
            assert len(out.token_ids) == len(out.logprobs) == n
            assert out.finish_reason == "length"


def test_same_seed_same_output_other_seed_other_output(generator):
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=7)
    first = generator.generate(PROMPTS, params)
    again = generator.generate(PROMPTS, params)
    assert [o.token_ids for o in first] == [o.token_ids for o in again]
    assert [o.logprobs for o in first] == [o.logprobs for o in again]
    other = generator.generate(PROMPTS, SamplingParams(max_new_tokens=12, seed=8))
    assert [o.token_ids for o in first] != [o.token_ids for o in other]


def test_top_k_1_and_tiny_top_p_are_greedy(generator):
    greedy = generator.generate(PROMPTS, SamplingParams(max_new_tokens=8, temperature=0.0))
    for params in (
        SamplingParams(max_new_tokens=8, temperature=1.5, top_k=1, seed=3),
        SamplingParams(max_new_tokens=8, temperature=1.5, top_p=1e-6, seed=3),
    ):
        outs = generator.generate(PROMPTS, params)
        assert [o.token_ids for o in outs] == [o.token_ids for o in greedy]


def test_sampling_truncation_on_a_known_distribution():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]])).repeat(4000, 1)
    rng = torch.Generator().manual_seed(0)

    def counts(params, allowed=None):
        tokens, logprobs = sample_next_tokens(logits, params, rng, allowed)
        torch.testing.assert_close(logprobs, logits[0].log_softmax(-1)[tokens])
        return torch.bincount(tokens, minlength=4).tolist()

    assert counts(SamplingParams(top_k=2))[2:] == [0, 0]
    assert counts(SamplingParams(top_p=0.75))[2:] == [0, 0]  # 0.5 + 0.3 covers 0.75
    assert counts(SamplingParams(top_p=0.85))[3] == 0  # 0.95 needed after 0.8 < 0.85
    only_rare = torch.tensor([False, False, True, True])
    rare = counts(SamplingParams(), only_rare)
    assert rare[:2] == [0, 0] and 2400 < rare[2] < 3600  # 0.15 : 0.05 renormalised to 3 : 1
    plain = counts(SamplingParams())
    assert 1850 < plain[0] < 2150


def test_inverse_cdf_draw_never_picks_zero_probability_tokens():
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0]]).repeat(8000, 1)
    tokens = _draw(probs, torch.Generator().manual_seed(0))
    counts = torch.bincount(tokens, minlength=5).tolist()
    assert counts[0] == counts[2] == counts[4] == 0
    assert 1800 < counts[1] < 2200
    # Unnormalised rows work too, and a single possible token is always drawn.
    assert _draw(torch.tensor([[0.0, 0.0, 3.0]]), None).tolist() == [2]


def test_update_weights_switches_to_the_new_policy(tiny, load):
    model0, tokenizer = load(seed=0)  # the generator owns this copy
    model1, _ = load(seed=1)
    generator = HFGenerator(model0, tokenizer)
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    before = generator.generate(PROMPTS, params)
    expected = HFGenerator(model1, tokenizer).generate(PROMPTS, params)
    assert [o.token_ids for o in before] != [o.token_ids for o in expected]
    generator.update_weights(model1.state_dict())
    after = generator.generate(PROMPTS, params)
    assert [o.token_ids for o in after] == [o.token_ids for o in expected]
    for prompt, out in zip(PROMPTS, after, strict=True):
        assert out.token_ids == _reference_greedy(model1, tuple(prompt), 8)
    # Tied output embeddings may be left out, as safetensors files do; other keys may not.
    weights = {k: v for k, v in load(seed=2)[0].state_dict().items() if k != "lm_head.weight"}
    generator.update_weights(weights)
    assert torch.equal(generator.model.lm_head.weight, weights["model.embed_tokens.weight"])
    del weights["model.norm.weight"]
    with pytest.raises(RuntimeError, match="model.norm.weight"):
        generator.update_weights(weights)


def test_bad_requests_are_refused(generator):
    with pytest.raises(ValueError, match="empty"):
        generator.generate([[1, 2], []], SamplingParams())
    with pytest.raises(ValueError, match=r"prompt 1 has token ids \[1000000\] outside"):
        generator.generate([[1, 2], [5, 10**6]], SamplingParams())
    with pytest.raises(ValueError, match="temperature"):
        generator.generate([[1]], SamplingParams(temperature=-1))
    with pytest.raises(ValueError, match="top_p"):
        generator.generate([[1]], SamplingParams(top_p=0))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        generator.generate([[1]], SamplingParams(allowed_token_ids=(10**6,)))
    with pytest.raises(ValueError, match="allowed_token_ids is empty"):
        generator.generate([[1]], SamplingParams(allowed_token_ids=()))
    assert generator.generate([], SamplingParams()) == []


def test_generator_leaves_no_grad_state_and_satisfies_the_protocol(generator):
    protocol_methods = [m for m in vars(Generator) if not m.startswith("_")]
    assert sorted(protocol_methods) == ["generate", "update_weights"]
    assert all(callable(getattr(generator, m)) for m in protocol_methods)
    assert not generator.model.training
    assert torch.is_grad_enabled()  # inference mode was only inside generate


def test_make_generator_builds_hf_and_names_the_backends(tiny):
    model, tokenizer = tiny
    generator = make_generator("hf", model, tokenizer, max_batch_size=4)
    assert isinstance(generator, HFGenerator) and generator.max_batch_size == 4
    with pytest.raises(
        ValueError, match=r"unknown generation backend 'vlm'; available: 'continuous', 'hf'"
    ):
        make_generator("vlm", model, tokenizer)
