"""The ``tools`` action format: calls, their errors, several calls a message, garbage."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollenv
from rollenv.policies import text_env_of


def _tools(env_id: str, **kwargs):
    return rollenv.make(env_id, action_format="tools", **kwargs)


def _message(*calls: tuple[str, object], call_id: str | None = "call_1") -> str:
    entries = []
    for number, (name, arguments) in enumerate(calls, start=1):
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        entry = {"type": "function", "function": {"name": name, "arguments": text}}
        if call_id is not None:
            entry["id"] = f"{call_id}_{number}"
        entries.append(entry)
    return json.dumps({"role": "assistant", "content": None, "tool_calls": entries})


def test_a_call_is_the_text_action_it_stands_for():
    text, tools = rollenv.make("Sokoban-v0"), _tools("Sokoban-v0")
    assert text.reset(seed=3)[0] == tools.reset(seed=3)[0]
    for direction in ("Down", "Right", "Up", "Left"):
        expected = text.step(f"<answer>{direction}</answer>")
        obs, reward, terminated, truncated, info = tools.step(
            _message(("move", {"direction": direction}))
        )
        assert json.loads(obs) == [
            {"role": "tool", "tool_call_id": "call_1_1", "content": expected[0]}
        ]
        assert (reward, terminated, truncated) == expected[1:4]
        assert info["metrics"] == expected[4]["metrics"]


def test_several_calls_in_one_message_run_in_order_up_to_the_envs_actions_per_turn():
    text = rollenv.make("Sokoban-v0", max_actions_per_turn=2)
    tools = _tools("Sokoban-v0", max_actions_per_turn=2)
    text.reset(seed=3), tools.reset(seed=3)
    expected = text.step("<answer>Down || Right</answer>")
    obs, reward, *_ = tools.step(
        _message(("move", {"direction": "Down"}), ("move", {"direction": "Right"}))
    )
    messages = json.loads(obs)
    assert [m["tool_call_id"] for m in messages] == ["call_1_1", "call_1_2"]
    assert messages[-1]["content"] == expected[0] and reward == expected[1]
    three = _message(*[("move", {"direction": "Up"})] * 3)
    obs, reward, *_, info = tools.step(three)
    assert reward == -0.1 and info["metrics"]["action_is_valid"] is False
    assert "3 tool calls in one message; at most 2" in json.loads(obs)[0]["content"]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("Up", "not JSON"),
        ('{"role": "assistant", "content": "Up"}', "calls no tool"),
        (_message(("jump", {})), "unknown tool 'jump': call one of move"),
        (_message(("move", "{direction: Up")), "are not JSON"),
        (_message(("move", {"direction": 3})), "direction: 3 is not one of"),
        (_message(("move", {"direction": "Up", "speed": 2})), "Additional properties"),
        (_message(("move", {"direction": "Up"}), call_id=None), "needs an id"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_a_message_the_env_cannot_run_is_a_penalised_no_op_that_says_why(message, reason):
    env = _tools("Sokoban-v0")
    first, _ = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step(message)
    assert (reward, terminated, info["metrics"]["action_is_valid"]) == (-0.1, False, False)
    assert text_env_of(env).render() == first  # nothing moved
    (reply,) = json.loads(obs)
    assert reason in reply["content"] and reply["content"].endswith(first)


def test_a_call_the_schema_allows_but_the_game_refuses_is_invalid():
    env = _tools("Minesweeper-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(_message(("reveal", {"row": 1, "col": 1})))
    assert info["metrics"]["action_is_valid"] is True
    # a reveal of an already revealed cell is a valid call the game may take as a no-op;
    # a flag beyond the board breaks the schema's maximum
    obs, reward, *_, info = env.step(_message(("flag", {"row": 99, "col": 1})))
    assert info["metrics"]["action_is_valid"] is False
    assert "99 is greater than the maximum" in json.loads(obs)[0]["content"]


def test_an_unknown_action_format_names_the_allowed_ones():
    with pytest.raises(ValueError, match="action_format must be one of 'text', 'tools'"):
        rollenv.make("Sokoban-v0", action_format="tool")


def test_gymnasium_make_takes_the_action_format():
    import gymnasium

    env = gymnasium.make("rollenv/SimpleSokoban-v0", action_format="tools")
    _, info = env.reset(seed=0)
    assert info["tools"][0]["function"]["name"] == "move"


# garbage a model or a client may send: texts, JSON of any shape, calls with every field
# wrong, many calls, huge arguments
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_names = st.sampled_from(["move", "answer", "search", "click", "submit", "act", "x", ""])
_call = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=8), st.integers(), st.just("c" * 300)),
        "type": st.just("function"),
        "function": st.one_of(
            _json,
            st.fixed_dictionaries(
                {"name": st.one_of(_names, _json)},
                optional={"arguments": st.one_of(st.text(max_size=30), _json.map(json.dumps))},
            ),
        ),
    },
)
garbage = st.one_of(
    st.text(),
    _json.map(json.dumps),
    st.lists(_call, max_size=4).map(lambda calls: json.dumps({"tool_calls": calls})),
    st.just(
        json.dumps(
            {"tool_calls": [{"id": str(i), "function": {"name": "move"}} for i in range(1000)]}
        )
    ),
    st.just(_message(("move", {"direction": "U" * 1_000_000}))),
    st.just(_message(("answer", "[" * 100_000))),
    st.just({"tool_calls": "not a list"}),
    st.just(None),
)


def _check_garbage(env_id: str, message: object, env=None) -> None:
    """Resets ``env`` (a new one of ``env_id``, closed after, when none is given) and steps it
    with ``message``: the step answers with tool messages and never raises."""
    made = env is None
    env = _tools(env_id) if made else env
    try:
        env.reset(seed=1)
        obs, reward, terminated, truncated, info = env.step(message)
        assert env.observation_space.contains(obs)
        assert json.loads(obs) == info["tool_messages"]
        assert isinstance(reward, float) and math.isfinite(reward)
        assert set(info["metrics"]) >= {"success", "action_is_valid", "action_is_effective"}
    finally:
        if made:
            env.close()


@pytest.fixture(scope="module")
def tool_envs():
    """One env of each id for all of its examples: reset after every garbage message (an
    MCPTools-v0 env starts its MCP server, over a second, once instead of 120 times)."""
    envs: dict = {}
    yield envs
    for env in envs.values():
        env.close()


@pytest.mark.parametrize("env_id", ["Sokoban-v0", "WebShop-v0", "MCPTools-v0", "MathTool-v0"])
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(message=garbage)
def test_garbage_messages_never_raise(tool_envs, env_id, message):
    if env_id not in tool_envs:
        tool_envs[env_id] = _tools(env_id)
    _check_garbage(env_id, message, tool_envs[env_id])


def test_the_answers_to_many_rejected_calls_fit_the_text_space_as_json():
    # each of a rejected message's calls is answered with the error and the state: sixteen
    # answers of a long state once overflowed the space and were cut mid-JSON
    from rollenv.text_env import MAX_TEXT_LENGTH
    from rollenv.tool_calls import _fitting

    answers = [
        {"role": "tool", "tool_call_id": "c" * 256, "content": 'a "quoted" state\n' * 600}
        for _ in range(16)
    ]
    text = _fitting(answers)
    assert len(text) <= MAX_TEXT_LENGTH
    assert [m["tool_call_id"] for m in json.loads(text)] == ["c" * 256] * 16
