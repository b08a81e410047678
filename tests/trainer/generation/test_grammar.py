"""Grammar-constrained decoding in the CPU engines: every reply sampled under a format's call
grammar is calls the format reads, valid for the tools' schemas, whatever the weights; the
log-probabilities keep their two meanings (whole vocabulary, or among the allowed tokens)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("llguidance")
jsonschema = pytest.importorskip("jsonschema")

from trainer.generation import make_generator  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.grammar import GrammarMasks  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.tool_call_formats import TOOL_CALL_FORMATS, Call, tool_call_format  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "move",
            "parameters": {
                "type": "object",
                "properties": {"direction": {"enum": ["Up", "Down", "Left", "Right"]}},
                "required": ["direction"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "jump",
            "parameters": {
                "type": "object",
                "properties": {
                    "height": {"type": "integer", "minimum": 1, "maximum": 3},
                    "twist": {"type": "boolean"},
                },
                "required": ["height", "twist"],
                "additionalProperties": False,
            },
        },
    },
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}


@pytest.fixture(scope="module")
def model_and_tokenizer():
    return load_model("tiny-random", seed=0)


def _prompt(tokenizer) -> list[int]:
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": "Move."}], add_generation_prompt=True, tokenize=True
    )["input_ids"]


def _read_calls(fmt, tokenizer, output) -> list:
    """The calls of a reply that ended at its stop token, each checked against its schema."""
    assert output.finish_reason == "stop"
    assert output.token_ids[-1] == tokenizer.eos_token_id
    parsed = fmt.parse(tokenizer.decode(output.token_ids[:-1]))
    assert parsed.problem is None and parsed.calls and parsed.content is None
    for call in parsed.calls:
        jsonschema.validate(call.arguments, SCHEMAS[call.name])
    return list(parsed.calls)


@pytest.mark.parametrize("backend", ["continuous", "hf"])
@pytest.mark.parametrize("fmt_name", sorted(TOOL_CALL_FORMATS))
def test_every_reply_under_a_call_grammar_is_one_schema_valid_call(
    model_and_tokenizer, backend, fmt_name
):
    model, tokenizer = model_and_tokenizer
    fmt = tool_call_format(fmt_name)
    generator = make_generator(backend, model, tokenizer)
    params = SamplingParams(
        max_new_tokens=120,
        temperature=1.5,
        seed=3,
        grammar=fmt.call_grammar(TOOLS, parallel=False),
    )
    names = set()
    for output in generator.generate([_prompt(tokenizer)] * 8, params):
        (call,) = _read_calls(fmt, tokenizer, output)
        names.add(call.name)
    assert names == {"move", "jump"}  # the grammar does not narrow the model to one tool


@pytest.mark.parametrize("fmt_name", sorted(TOOL_CALL_FORMATS))
def test_parallel_calls_are_each_schema_valid(model_and_tokenizer, fmt_name):
    model, tokenizer = model_and_tokenizer
    fmt = tool_call_format(fmt_name)
    generator = make_generator("continuous", model, tokenizer)
    params = SamplingParams(max_new_tokens=300, temperature=1.0, seed=4,
                            grammar=fmt.call_grammar(TOOLS))  # fmt: skip
    outputs = generator.generate([_prompt(tokenizer)] * 8, params)
    # random weights may chain calls past the token budget; every reply that ended is calls
    ended = [output for output in outputs if output.finish_reason == "stop"]
    assert len(ended) >= 4
    counts = [len(_read_calls(fmt, tokenizer, output)) for output in ended]
    assert max(counts) > 1


@pytest.fixture(scope="module")
def vocabulary(model_and_tokenizer) -> dict[int, str]:
    _, tokenizer = model_and_tokenizer
    return {token: tokenizer.decode([token]) for token in range(len(tokenizer))}


def _walk(masks, matcher, vocabulary, text: str) -> bool:
    """Whether the grammar lets ``text`` be written: at each step the longest allowed token
    that continues it (llguidance allows the tokenizations it deems canonical, not every one)."""
    while text:
        allowed = masks.allowed([matcher])[0].nonzero().flatten().tolist()
        fitting = [t for t in allowed if vocabulary[t] and text.startswith(vocabulary[t])]
        if not fitting:
            return False
        token = max(fitting, key=lambda t: len(vocabulary[t]))
        matcher.consume_token(token)
        text = text[len(vocabulary[token]) :]
    return True


@pytest.mark.parametrize("fmt_name", sorted(TOOL_CALL_FORMATS))
@pytest.mark.parametrize("parallel", [True, False])
def test_the_grammar_takes_what_the_format_writes(
    model_and_tokenizer, vocabulary, fmt_name, parallel
):
    _, tokenizer = model_and_tokenizer
    fmt = tool_call_format(fmt_name)
    masks = GrammarMasks(tokenizer, len(tokenizer), (tokenizer.eos_token_id,))
    calls = [Call("move", {"direction": "Up"}), Call("jump", {"height": 2, "twist": True})]
    for written, fits in [
        (fmt.write_calls(calls[:1]), True),
        (fmt.write_calls(calls), parallel),
        (fmt.write_calls([Call("move", {"direction": "North"})]), False),
        (fmt.write_calls([Call("fly", {})]), False),
    ]:
        matcher = masks.matcher(fmt.call_grammar(TOOLS, parallel=parallel))
        taken = _walk(masks, matcher, vocabulary, written)
        assert (taken and matcher.is_accepting()) == fits, written


def test_logprobs_are_over_the_vocabulary_or_among_the_allowed_tokens(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    grammar = tool_call_format("hermes").call_grammar(TOOLS[:1], parallel=False)
    prompt = _prompt(tokenizer)
    full, among = (
        make_generator("continuous", model, tokenizer).generate(
            [prompt],
            SamplingParams(
                max_new_tokens=40, temperature=0, grammar=grammar, logprobs_among_allowed=among
            ),
        )[0]
        for among in (False, True)
    )
    assert full.token_ids == among.token_ids
    # a token the grammar forces has probability 1 among the allowed, less over the vocabulary
    assert max(among.logprobs) == pytest.approx(0.0, abs=1e-6)
    assert all(a >= f - 1e-6 for a, f in zip(among.logprobs, full.logprobs, strict=True))
    assert min(full.logprobs) < -1.0

    # the whole-vocabulary figures are the model's own, recomputed without the grammar
    ids = torch.tensor([prompt + full.token_ids])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float().log_softmax(-1)
    recomputed = logits.gather(-1, torch.tensor(full.token_ids)[:, None]).squeeze(-1)
    assert torch.allclose(recomputed, torch.tensor(full.logprobs), atol=1e-3)


def test_a_grammar_that_does_not_compile_is_a_value_error_naming_it(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    generator = make_generator("continuous", model, tokenizer)
    with pytest.raises(ValueError, match="the grammar does not compile"):
        generator.generate([_prompt(tokenizer)], SamplingParams(grammar="start: undefined_rule"))
    with pytest.raises(ValueError, match="grammar must be a non-empty"):
        generator.generate([_prompt(tokenizer)], SamplingParams(grammar=" "))


def test_requests_with_and_without_a_grammar_share_a_stream(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    generator = make_generator("continuous", model, tokenizer)
    free = SamplingParams(max_new_tokens=30, temperature=1.0, seed=1)
    constrained = SamplingParams(
        max_new_tokens=60,
        temperature=1.0,
        seed=2,
        grammar=tool_call_format("smollm2").call_grammar(TOOLS, parallel=False),
    )
    stream = generator.stream(free)
    prompt = _prompt(tokenizer)
    for i in range(3):
        stream.submit(prompt, key=("free", i))
        stream.submit(prompt, key=("calls", i), params=constrained)
    finished = {}
    while stream.busy:
        finished.update(stream.step())
    for i in range(3):
        text = tokenizer.decode(finished["calls", i].token_ids[:-1])
        (call,) = tool_call_format("smollm2").parse(text).calls
        jsonschema.validate(call.arguments, SCHEMAS[call.name])
        assert "<tool_call>" not in tokenizer.decode(finished["free", i].token_ids)


def test_recorded_choices_are_the_grammars_allowed_tokens_and_the_logprobs_are_among_them(
    model_and_tokenizer,
):
    model, tokenizer = model_and_tokenizer
    grammar = tool_call_format("hermes").call_grammar(TOOLS, parallel=False)
    prompt = _prompt(tokenizer)
    params = SamplingParams(
        max_new_tokens=60, temperature=0.7, seed=3, grammar=grammar, record_choices=8
    )
    (output,) = make_generator("continuous", model, tokenizer).generate([prompt], params)
    plain = make_generator("continuous", model, tokenizer).generate(
        [prompt], SamplingParams(max_new_tokens=60, temperature=0.7, seed=3, grammar=grammar)
    )[0]
    assert plain.choices is None
    assert output.token_ids == plain.token_ids  # recording changes no draw
    assert len(output.choices) == len(output.token_ids)

    # the choices are what the grammar allowed at each token, where it allowed at most 8
    masks = GrammarMasks(tokenizer, model.config.vocab_size, (tokenizer.eos_token_id,))
    matcher = masks.matcher(grammar)
    ids = torch.tensor([prompt + output.token_ids])
    with torch.no_grad():
        scaled = model(ids).logits[0, len(prompt) - 1 : -1].float() / 0.7
    kinds = set()
    for t, (token, among) in enumerate(zip(output.token_ids, output.choices, strict=True)):
        allowed = masks.allowed([matcher])[0].nonzero().flatten().tolist()
        masks.advance(matcher, token)
        if len(allowed) > 8:
            assert among is None
            expected = scaled[t].log_softmax(-1)[token]
            kinds.add("many")
        else:
            assert among == tuple(allowed) and token in among
            expected = scaled[t, token] - scaled[t, list(among)].logsumexp(-1)
            kinds.add("forced" if len(among) == 1 else "few")
        assert output.logprobs[t] == pytest.approx(float(expected), abs=2e-3)
    assert {"forced", "few"} <= kinds  # the call's JSON is forced, its values are chosen
