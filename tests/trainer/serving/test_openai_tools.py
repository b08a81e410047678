"""``roll-agent serve`` with tools, through the real ``openai`` client: tools rendered into the
prompt, ``role: tool`` messages continued, malformed tools refused by name, a reply that calls
a tool returned as ``tool_calls``, and ``tool_choice`` ``required`` or named kept by
grammar-constrained decoding."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

pytest.importorskip("torch")
pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("llguidance")

from openai.types.chat import ChatCompletionChunk  # noqa: E402

from trainer.generation.continuous import ContinuousGenerator  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.serving.engine import ServingEngine  # noqa: E402
from trainer.serving.openai_server import build_app, listening_socket  # noqa: E402
from trainer.serving.tool_requests import tool_reply  # noqa: E402
from trainer.tool_call_formats import tool_call_format  # noqa: E402

MODEL = "tiny-random"
MOVE = {
    "type": "function",
    "function": {
        "name": "move",
        "description": "Moves the player one cell.",
        "parameters": {
            "type": "object",
            "properties": {"direction": {"type": "string", "enum": ["Up", "Down"]}},
            "required": ["direction"],
            "additionalProperties": False,
        },
    },
}
JUMP = {
    "type": "function",
    "function": {
        "name": "jump",
        "description": "Jumps on the spot.",
        "parameters": {
            "type": "object",
            "properties": {
                "height": {"type": "integer", "minimum": 1, "maximum": 3},
                "note": {"type": "string", "maxLength": 12},
            },
            "required": ["height"],
            "additionalProperties": False,
        },
    },
}
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in (MOVE, JUMP)}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "move", "arguments": '{"direction": "Up"}'},
}


@pytest.fixture(scope="module")
def client():
    model, tokenizer = load_model(MODEL, seed=0)
    engine = ServingEngine(ContinuousGenerator(model, tokenizer, max_batch_size=8))
    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(build_app(engine, MODEL), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    host, port = sock.getsockname()[:2]
    yield openai.OpenAI(base_url=f"http://{host}:{port}/v1", api_key="EMPTY", max_retries=0)
    server.should_exit = True
    thread.join(timeout=30)
    engine.close()
    sock.close()


def _ask(client, messages, **kwargs):
    return client.chat.completions.create(
        model=MODEL, messages=messages, max_tokens=8, temperature=0, **kwargs
    )


def test_the_tools_are_rendered_into_the_prompt(client):
    messages = [{"role": "user", "content": "Push the box."}]
    plain = _ask(client, messages)
    with_tools = _ask(client, messages, tools=[MOVE])
    # the default model's template has no tools branch: the smollm2 format lists them
    assert with_tools.usage.prompt_tokens > plain.usage.prompt_tokens + 20
    assert with_tools.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_a_conversation_with_calls_and_tool_results_goes_on(client):
    messages = [
        {"role": "user", "content": "Push the box."},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "The box moved up."},
    ]
    reply = _ask(client, messages, tools=[MOVE])
    assert reply.choices[0].message.role == "assistant"
    assert reply.usage.prompt_tokens > 0


@pytest.mark.parametrize(
    ("tools", "tool_choice", "problem"),
    [
        ([MOVE, MOVE], None, "'move' is given twice"),
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}],
            None,
            "tools[0].function.parameters is not a valid JSON Schema",
        ),
        ([{"type": "function", "function": {"name": "a b"}}], None, "tools[0].function.name"),
        ([{"type": "retrieval"}], None, 'each tool must be {"type": "function"'),
        ([MOVE], {"type": "function", "function": {"name": "jump"}}, "not among the tools"),
        ([MOVE], "sometimes", "tool_choice must be 'none', 'auto', 'required'"),
        ([], "required", "needs tools to call"),
    ],
)
def test_malformed_tools_get_a_400_that_names_the_problem(client, tools, tool_choice, problem):
    kwargs = {"tools": tools} | ({} if tool_choice is None else {"tool_choice": tool_choice})
    with pytest.raises(openai.BadRequestError) as caught:
        _ask(client, [{"role": "user", "content": "hi"}], **kwargs)
    assert problem in caught.value.message


def test_a_streamed_reply_read_for_calls_arrives_whole_with_its_finish_reason(client):
    messages = [{"role": "user", "content": "Push the box."}]
    whole = _ask(client, messages, tools=[MOVE], seed=5)
    chunks = list(
        client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=8, temperature=0, tools=[MOVE], seed=5,
            stream=True,
        )
    )  # fmt: skip
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == (whole.choices[0].message.content or "")
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason


def test_a_reply_that_calls_a_tool_is_returned_as_tool_calls():
    text = (
        'Going up.\n<tool_call>\n{"name": "move", "arguments": {"direction": "Up"}}\n</tool_call>'
    )
    reply = tool_reply(tool_call_format("smollm2"), text, parallel=True)
    assert reply.finish_reason == "tool_calls"
    assert reply.message["content"] == "Going up."
    (call,) = reply.message["tool_calls"]
    assert call["function"] == {"name": "move", "arguments": '{"direction": "Up"}'}
    # the stream's delta is one OpenAI accepts, and it assembles to the same call
    chunk = ChatCompletionChunk.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": MODEL,
            "choices": [{"index": 0, "delta": reply.delta(), "finish_reason": "tool_calls"}],
        }
    )
    (streamed,) = chunk.choices[0].delta.tool_calls
    assert (streamed.id, streamed.function.name) == (call["id"], "move")
    assert json.loads(streamed.function.arguments) == {"direction": "Up"}


def test_without_parallel_calls_only_the_first_call_is_returned():
    fmt = tool_call_format("hermes")
    text = fmt.write_calls([*fmt.parse(CALL_TEXT).calls] * 2)
    assert len(tool_reply(fmt, text, parallel=True).message["tool_calls"]) == 2
    assert len(tool_reply(fmt, text, parallel=False).message["tool_calls"]) == 1


CALL_TEXT = '<tool_call>{"name": "move", "arguments": {"direction": "Down"}}</tool_call>'


def _checked_calls(choice) -> list[tuple[str, dict]]:
    """The calls of a reply, each valid for its tool's schema."""
    assert choice.finish_reason == "tool_calls"
    calls = []
    for call in choice.message.tool_calls:
        arguments = json.loads(call.function.arguments)
        jsonschema.validate(arguments, SCHEMAS[call.function.name])
        calls.append((call.function.name, arguments))
    return calls


def _constrained(client, seed: int, **kwargs):
    return client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Move or jump."}],
        tools=[MOVE, JUMP],
        max_tokens=100,
        temperature=1.0,
        seed=seed,
        **kwargs,
    )


def test_tool_choice_required_gets_a_schema_valid_call_on_every_request(client):
    # random weights, sampled at temperature 1: only the grammar makes these calls
    with ThreadPoolExecutor(8) as pool:
        replies = list(
            pool.map(
                lambda seed: _constrained(
                    client, seed, tool_choice="required", parallel_tool_calls=False
                ),
                range(200),
            )
        )
    calls = [_checked_calls(reply.choices[0]) for reply in replies]
    assert all(len(made) == 1 for made in calls)
    assert {made[0][0] for made in calls} == {"move", "jump"}


def test_parallel_calls_under_required_are_each_schema_valid(client):
    replies = [
        _constrained(client, seed, tool_choice="required", max_completion_tokens=400)
        for seed in range(12)
    ]
    ended = [r.choices[0] for r in replies if r.choices[0].finish_reason != "length"]
    assert len(ended) >= 6  # random weights may chain calls past the token budget
    counts = [len(_checked_calls(choice)) for choice in ended]
    assert max(counts) > 1  # more than one call where the request allows it


def test_a_named_tool_choice_calls_that_tool(client):
    named = {"type": "function", "function": {"name": "jump"}}
    for seed in range(10):
        reply = _constrained(client, seed, tool_choice=named)
        [(name, _)] = _checked_calls(reply.choices[0])
        assert name == "jump"


def test_a_streamed_constrained_call_assembles_to_the_same_call(client):
    whole = _constrained(client, 7, tool_choice="required", parallel_tool_calls=False)
    stream = _constrained(client, 7, tool_choice="required", parallel_tool_calls=False, stream=True)
    names, arguments, finish = {}, {}, None
    for chunk in stream:
        for delta in chunk.choices[0].delta.tool_calls or []:
            names[delta.index] = names.get(delta.index, "") + (delta.function.name or "")
            arguments[delta.index] = arguments.get(delta.index, "") + (
                delta.function.arguments or ""
            )
        finish = chunk.choices[0].finish_reason or finish
    [(name, args)] = _checked_calls(whole.choices[0])
    assert finish == "tool_calls"
    assert (names[0], json.loads(arguments[0])) == (name, args)


def test_a_constrained_call_continues_after_its_tool_result(client):
    first = _constrained(client, 3, tool_choice="required", parallel_tool_calls=False)
    call = first.choices[0].message.tool_calls[0]
    messages = [
        {"role": "user", "content": "Move or jump."},
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "Done."},
    ]
    second = client.chat.completions.create(
        model=MODEL, messages=messages, tools=[MOVE, JUMP], tool_choice="required",
        max_tokens=100, temperature=1.0, seed=4,
    )  # fmt: skip
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    _checked_calls(second.choices[0])
