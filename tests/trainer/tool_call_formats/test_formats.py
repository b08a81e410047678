"""Tool-call formats: calls written and read back, chats rendered through templates with and
without a tools branch, and no text that makes a parser raise."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rollenv
from trainer.models import load_tokenizer
from trainer.tool_call_formats import (
    TOOL_CALL_FORMATS,
    Call,
    template_takes_tools,
    tool_call_format,
)

TEMPLATES = Path(__file__).parent / "templates"
FORMATS = sorted(TOOL_CALL_FORMATS)
# the committed fixture each format's family would bring with its model
FAMILY_TEMPLATES = {"hermes": "hermes", "llama3-json": "llama3", "mistral": "mistral"}

MOVE = {
    "type": "function",
    "function": {
        "name": "move",
        "description": "Moves the player.",
        "parameters": {
            "type": "object",
            "properties": {"direction": {"type": "string", "enum": ["Up", "Down"]}},
            "required": ["direction"],
        },
    },
}


@pytest.fixture(scope="module")
def smollm2():
    return load_tokenizer("tiny-random")


def _with_template(tokenizer, name: str):
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = (TEMPLATES / f"{name}.jinja").read_text()
    return tokenizer


def _chat() -> list[dict]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "move", "arguments": '{"direction": "Up"}'},
    }
    return [
        {"role": "system", "content": "Push the box onto the target."},
        {"role": "user", "content": "Board: P above X."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Board: P next to X."},
    ]


_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
_calls = st.lists(
    st.builds(Call, _names, st.dictionaries(st.text(max_size=8), _values, max_size=4)),
    min_size=1,
    max_size=3,
)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=80, deadline=None)
@given(calls=_calls)
def test_written_calls_read_back(name, calls):
    fmt = tool_call_format(name)
    parsed = fmt.parse(fmt.write_calls(calls))
    assert parsed.problem is None and parsed.calls == tuple(calls)


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=150, deadline=None)
@given(
    text=st.one_of(
        st.text(),
        st.text(alphabet='{}[]":,<>/ _tol\\acnemrsTOLCA').map(lambda t: "<tool_call>" + t),
        st.text(alphabet='{}[]":, ').map(lambda t: "[TOOL_CALLS]" + t),
        st.text(alphabet='{}[]":, name').map(lambda t: "{" + t),
    )
)
def test_no_text_makes_a_parser_raise(name, text):
    parsed = tool_call_format(name).parse(text)
    message = parsed.message()
    assert message["role"] == "assistant"
    assert bool(parsed.calls) == ("tool_calls" in message)
    if parsed.problem is not None:
        assert parsed.calls == ()


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>" * 20_000,
        "[TOOL_CALLS]" + "[" * 100_000,
        "{" * 100_000,
        '<tool_call>{"name": "move", "arguments": "not json"}</tool_call>',
        "<tool_call>{'name': 'move'}</tool_call>",
    ],
)
@pytest.mark.parametrize("name", FORMATS)
def test_adversarial_replies_give_a_problem_or_no_call(name, text):
    parsed = tool_call_format(name).parse(text)
    assert parsed.calls == ()


def test_a_reply_with_text_and_a_call_keeps_both():
    parsed = tool_call_format("hermes").parse(
        'The box is below.\n<tool_call>\n{"name": "move", "arguments": {"direction": "Down"}}'
        "\n</tool_call>"
    )
    assert parsed.content == "The box is below."
    assert parsed.calls == (Call("move", {"direction": "Down"}),)


def test_an_unclosed_call_is_a_problem_not_text():
    parsed = tool_call_format("hermes").parse('<tool_call>{"name": "move"')
    assert parsed.calls == () and parsed.problem == "a <tool_call> is not closed"


def test_smollm2s_template_has_no_tools_branch_and_the_fixtures_do(smollm2):
    assert not template_takes_tools(smollm2)
    for template in FAMILY_TEMPLATES.values():
        assert template_takes_tools(_with_template(smollm2, template))


def test_smollm2_format_lists_the_tools_in_the_system_message_and_survives_none_content(
    smollm2,
):
    # SmolLM2's own template cannot take a call's None content
    with pytest.raises((TypeError, jinja2.exceptions.TemplateError)):
        smollm2.apply_chat_template(_chat(), tokenize=False)
    text = tool_call_format("smollm2").render(smollm2, _chat(), [MOVE])
    system = text.split("<|im_end|>")[0]
    assert "Push the box onto the target." in system and '"name": "move"' in system
    assert '<tool_call>\n{"name": "move", "arguments": {"direction": "Up"}}\n</tool_call>' in text
    assert "<tool_response>\nBoard: P next to X.\n</tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize(("name", "template"), sorted(FAMILY_TEMPLATES.items()))
def test_a_template_with_a_tools_branch_renders_the_chat_itself(smollm2, name, template):
    tokenizer = _with_template(smollm2, template)
    fmt = tool_call_format(name)
    text = fmt.render(tokenizer, _chat(), [MOVE])
    assert text == tokenizer.apply_chat_template(
        _chat(), tools=[MOVE], tokenize=False, add_generation_prompt=True
    )
    assert '"Moves the player."' in text and "Board: P next to X." in text
    # the call as the template writes it is the call the format reads
    written = fmt.write_calls([Call("move", {"direction": "Up"})])
    assert fmt.parse(written).calls == (Call("move", {"direction": "Up"}),)


@pytest.mark.parametrize("name", FORMATS)
def test_a_parsed_reply_is_a_message_the_env_runs(name):
    fmt = tool_call_format(name)
    env = rollenv.make("Sokoban-v0", action_format="tools")
    env.reset(seed=3)
    message = fmt.parse(fmt.write_calls([Call("move", {"direction": "Down"})])).message()
    obs, reward, terminated, truncated, info = env.step(json.dumps(message))
    assert info["metrics"]["action_is_valid"] is True
    assert json.loads(obs)[0]["tool_call_id"] == "call_1"
