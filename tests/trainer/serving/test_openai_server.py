"""``roll-agent serve`` for real: a uvicorn server on 127.0.0.1 over the tiny random model,
queried with the ``openai`` client and through the ``openai`` generation backend."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("torch")
pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

from trainer.cli.main import main  # noqa: E402
from trainer.generation import make_generator  # noqa: E402
from trainer.generation.base import SamplingParams  # noqa: E402
from trainer.generation.continuous import ContinuousGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.rollout.env_manager import EnvManager  # noqa: E402
from trainer.serving.engine import ServingEngine  # noqa: E402
from trainer.serving.openai_server import build_app, listening_socket  # noqa: E402

MODEL = "tiny-random"
PROMPTS = [[1, 2, 3, 4], [40, 41, 42], [7] * 12]


@pytest.fixture(scope="module")
def served():
    model, tokenizer = load_model(MODEL, seed=0)
    engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=16))
    sock = listening_socket()  # bound before the server runs: no waiting for it to start
    server = uvicorn.Server(uvicorn.Config(build_app(engine, MODEL), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    host, port = sock.getsockname()[:2]
    yield engine, f"http://{host}:{port}/v1"
    server.should_exit = True
    thread.join(timeout=30)
    engine.close()
    sock.close()


@pytest.fixture(scope="module")
def local():
    model, tokenizer = load_model(MODEL, seed=0)
    return make_generator("continuous", model, tokenizer), tokenizer


def _client(url: str):
    return openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)


def test_models_lists_the_served_model(served):
    _, url = served
    assert [m.id for m in _client(url).models.list().data] == [MODEL]


def test_openai_backend_gets_the_engines_exact_tokens_and_logprobs(served, local):
    _, url = served
    reference, tokenizer = local
    params = SamplingParams(max_new_tokens=10, temperature=0.0)
    remote = make_generator("openai", MODEL, tokenizer, base_url=url)
    theirs, ours = remote.generate(PROMPTS, params), reference.generate(PROMPTS, params)
    for got, want in zip(theirs, ours, strict=True):
        assert got.token_ids == want.token_ids
        assert got.finish_reason == want.finish_reason
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)


def test_openai_backend_stops_at_a_stop_string_as_the_engine_does(served, local):
    _, url = served
    reference, tokenizer = local
    free = reference.generate(PROMPTS, SamplingParams(max_new_tokens=10, temperature=0.0))
    # the text of each greedy reply's tokens 2-3: most of them start inside a token
    texts = [tokenizer.decode(out.token_ids[:4], skip_special_tokens=True) for out in free]
    stops = tuple({text[2:] for text in texts} - {""})
    params = SamplingParams(max_new_tokens=10, temperature=0.0, stop=stops)
    remote = make_generator("openai", MODEL, tokenizer, base_url=url)
    theirs, ours = remote.generate(PROMPTS, params), reference.generate(PROMPTS, params)
    assert any(len(o.token_ids) < 10 for o in ours)  # some replies did stop early
    for got, want in zip(theirs, ours, strict=True):
        assert got.token_ids == want.token_ids  # the stop string's tokens kept, as in process
        assert got.finish_reason == want.finish_reason


def test_concurrent_requests_share_forward_passes(served, local):
    engine, url = served
    _, tokenizer = local
    remote = make_generator("openai", MODEL, tokenizer, base_url=url)
    steps, tokens = engine.stats.steps, engine.stats.generation_tokens
    params = SamplingParams(max_new_tokens=4, seed=1, stop_token_ids=())
    remote.generate([[5, 6, 7 + i] for i in range(8)], params)
    assert engine.stats.generation_tokens - tokens == 32
    assert engine.stats.steps - steps < 32  # one pass decoded several requests


def test_chat_and_text_completions_decode_the_greedy_reply(served, local):
    _, url = served
    reference, tokenizer = local
    messages = [{"role": "user", "content": "Push the box onto the target."}]
    prompt = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
    greedy = SamplingParams(
        max_new_tokens=8, temperature=0.0, stop_token_ids=(tokenizer.eos_token_id,)
    )
    expected = tokenizer.decode(
        reference.generate([prompt_ids], greedy)[0].token_ids, skip_special_tokens=True
    )
    client = _client(url)
    chat = client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=8, temperature=0.0
    )
    assert chat.choices[0].message.content == expected
    assert chat.usage.prompt_tokens == len(prompt_ids)
    text = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0.0)
    assert text.choices[0].text == expected


def test_bad_requests_get_clear_errors(served):
    _, url = served
    client = _client(url)
    with pytest.raises(openai.NotFoundError, match="is not served here"):
        client.completions.create(model="gpt-4", prompt="hi", max_tokens=2)
    with pytest.raises(openai.BadRequestError, match="token ids"):
        client.completions.create(model=MODEL, prompt=[10**9], max_tokens=2)
    with pytest.raises(openai.BadRequestError, match="temperature: Input should be greater"):
        client.completions.create(model=MODEL, prompt="hi", max_tokens=2, temperature=-1)


def test_an_env_manager_plays_episodes_through_the_server(served, local):
    _, url = served
    _, tokenizer = local
    remote = make_generator("openai", MODEL, tokenizer, base_url=url)
    manager = EnvManager(
        "Sokoban-v0",
        tokenizer,
        remote,
        group_size=2,
        max_turns=2,
        sampling=SamplingParams(max_new_tokens=6, stop_token_ids=(tokenizer.eos_token_id,)),
    )
    trajectories = manager.rollout(seeds=[3])
    assert [len(t.turns) for t in trajectories] == [2, 2]
    for sample in (s for t in trajectories for s in t.samples):
        assert sum(sample.loss_mask) > 0


def test_the_server_refuses_new_weights_with_the_reason(local):
    _, tokenizer = local
    remote = make_generator("openai", MODEL, tokenizer, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(NotImplementedError, match="serves its own weights"):
        remote.update_weights({})


def test_serve_with_an_unknown_model_is_one_error_line(capsys):
    assert main(["serve", "--model", "smollm-135", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "smollm2-135m" in err[0]


def _chat(url: str, **options):
    messages = [{"role": "user", "content": "Push the box onto the target."}]
    return _client(url).chat.completions.create(
        model=MODEL, messages=messages, max_tokens=8, temperature=0.0, **options
    )


def test_streaming_yields_the_same_greedy_tokens_on_both_endpoints(served):
    _, url = served
    client = _client(url)
    whole = client.completions.create(model=MODEL, prompt="The box", max_tokens=8, temperature=0)
    chunks = list(
        client.completions.create(
            model=MODEL, prompt="The box", max_tokens=8, temperature=0, stream=True
        )
    )
    assert len(chunks) > 1
    assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason

    expected = _chat(url).choices[0]
    streamed = list(_chat(url, stream=True))
    assert streamed[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in streamed)
    assert text == expected.message.content and text
    assert streamed[-1].choices[0].finish_reason == expected.finish_reason


def test_n_returns_that_many_choices(served):
    _, url = served
    client = _client(url)
    sampled = client.completions.create(model=MODEL, prompt="Up", max_tokens=6, n=2, seed=3)
    assert [c.index for c in sampled.choices] == [0, 1]
    greedy = _chat(url, n=2)
    assert len(greedy.choices) == 2
    assert greedy.choices[0].message.content == greedy.choices[1].message.content


def test_stop_strings_cut_the_reply_before_them(served):
    _, url = served
    full = _chat(url).choices[0].message.content
    assert len(full) > 2
    stop = full[2:4]  # a piece of the greedy reply, from its third character
    cut = _chat(url, stop=[stop]).choices[0]
    assert cut.message.content == full[: full.find(stop)]
    assert cut.finish_reason == "stop"


def test_tools_on_completions_and_top_logprobs_are_refused_with_the_reason(served):
    _, url = served
    tool = {"type": "function", "function": {"name": "move", "parameters": {"type": "object"}}}
    with pytest.raises(openai.BadRequestError, match="tools are served by /v1/chat/completions"):
        _client(url).completions.create(
            model=MODEL, prompt="Push", max_tokens=2, extra_body={"tools": [tool]}
        )
    with pytest.raises(openai.BadRequestError, match="top_logprobs is not supported"):
        _chat(url, logprobs=True, top_logprobs=2)


def test_a_stream_can_end_with_the_token_counts(served, local):
    _, url = served
    _, tokenizer = local
    chunks = list(
        _client(url).completions.create(
            model=MODEL,
            prompt="The box",
            max_tokens=6,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens == 6  # ignore_eos: all six, whatever is drawn
    prompt_tokens = len(tokenizer.encode("The box", add_special_tokens=False))
    assert chunks[-1].usage.prompt_tokens == prompt_tokens
