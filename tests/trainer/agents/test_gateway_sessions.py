"""The gateway's sessions: a chat that re-sends its history continues the tokens it was given,
with text and with tool calls; an agent that rewrites its context starts a new segment; every
agent fault is counted and nothing of it is trained on; an ended session refuses calls."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from trainer.agents.agent_episodes import AgentEpisodes, load_agent
from trainer.agents.gateway import Gateway
from trainer.generation.continuous import ContinuousGenerator
from trainer.rollout.chat_tokens import ChatTokens
from trainer.serving.engine import ServingEngine
from trainer.tool_call_formats import tool_call_format_for

openai = pytest.importorskip("openai")


def _user_turn(reward, obs):
    return {"role": "user", "content": f"Reward: {reward:g}\n{obs}"}


async def forgetful_agent(env, llm):
    """Drops its history every 3 turns: keeps only the rules and the latest observation."""
    obs, info = env.reset()
    rules = {"role": "system", "content": info["instruction"]}
    messages = [rules, {"role": "user", "content": obs}]
    for turn in range(7):
        reply = await llm.chat.completions.create(model="m", messages=messages, max_tokens=6)
        text = reply.choices[0].message.content
        obs, reward, terminated, truncated, _ = env.step(text)
        if terminated or truncated:
            return
        if (turn + 1) % 3 == 0:
            messages = [rules, {"role": "user", "content": obs}]
        else:
            messages += [{"role": "assistant", "content": text}, _user_turn(reward, obs)]


def test_a_branching_agent_yields_one_segment_per_context_with_the_tokens_sampled(tiny, gateway):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    episodes = AgentEpisodes(forgetful_agent, "Sokoban-v0", gateway, concurrency=1)
    (outcome,) = episodes.play([5]).outcomes
    assert outcome.failure is None and outcome.calls == 7
    trajectory = outcome.trajectory
    assert len(trajectory.turns) == 7
    calls = outcome.session.calls
    assert [call.continues for call in calls] == [None, 0, 1, None, 3, 4, None]

    # each segment starts from a prompt rendered whole, and every later call's prompt is the
    # previous call's prompt and sampled ids, then the next user turn tokenised once
    for call in calls:
        if call.continues is None:
            text = tokenizer.apply_chat_template(
                call.messages, tokenize=False, add_generation_prompt=True
            )
            assert call.prompt_ids == tokenizer.encode(text, add_special_tokens=False)
        else:
            before = calls[call.continues]
            ended = before.token_ids[-1:] == [tokenizer.eos_token_id]
            user = call.messages[-1]["content"]
            assert call.prompt_ids == (
                before.prompt_ids + before.token_ids + chat.next_turn(user, ended)
            )
    segments = trajectory.samples
    assert len(segments) == 3
    for segment, members in zip(segments, [calls[0:3], calls[3:6], calls[6:7]], strict=True):
        assert segment.token_ids == members[-1].prompt_ids + members[-1].token_ids
        trained = [t for t, m in zip(segment.token_ids, segment.loss_mask, strict=True) if m]
        assert trained == [t for call in members for t in call.token_ids]
        turns = sorted({t for t in segment.turn_of_token if t >= 0})
        assert turns == [call.index for call in members]  # one call a turn, in order


async def tool_agent(env, llm):
    """Acts through OpenAI tool calls: the env's tools in the request, its tool messages back."""
    obs, info = env.reset()
    messages = [
        {"role": "system", "content": info["instruction"]},
        {"role": "user", "content": obs},
    ]
    for _ in range(3):
        reply = await llm.chat.completions.create(
            model="m", messages=messages, tools=info["tools"], tool_choice="required"
        )
        message = reply.choices[0].message
        assert message.tool_calls, "tool_choice=required gives a call"
        sent = message.model_dump(exclude_none=True)
        obs, reward, terminated, truncated, info = env.step(json.dumps(sent))
        if terminated or truncated:
            return
        messages += [sent, *info["tool_messages"]]


def test_a_tool_calling_chat_continues_after_its_tool_results_token_for_token(tiny, gateway):
    _, tokenizer = tiny
    tools = ChatTokens(tokenizer, tool_format=tool_call_format_for("auto", tokenizer))
    episodes = AgentEpisodes(
        tool_agent, "Sokoban-v0", gateway, env_kwargs={"action_format": "tools"}, concurrency=1
    )
    (outcome,) = episodes.play([2]).outcomes
    assert outcome.failure is None
    calls = outcome.session.calls
    assert all(call.reply_message["tool_calls"] for call in calls)
    for call in calls[1:]:
        assert call.continues == call.index - 1
        before = calls[call.continues]
        ended = before.token_ids[-1:] == [tokenizer.eos_token_id]
        results = call.messages[len(before.messages) + 1 :]
        # one result per call (the model may call in parallel)
        assert [m["role"] for m in results] == ["tool"] * len(before.reply_message["tool_calls"])
        assert call.prompt_ids == (
            before.prompt_ids + before.token_ids + tools.next_messages(results, ended)
        )
    (segment,) = outcome.trajectory.samples
    assert [t for t, m in zip(segment.token_ids, segment.loss_mask, strict=True) if m] == [
        t for call in calls for t in call.token_ids
    ]


def test_a_call_sampled_within_its_grammar_is_trained_on_its_choices_not_its_forced_json(tiny):
    model, _ = tiny
    engine = ServingEngine(ContinuousGenerator(model, tiny[1], max_batch_size=4))
    try:
        with Gateway(engine, record_choices=256) as recording:
            episodes = AgentEpisodes(
                tool_agent, "Sokoban-v0", recording, env_kwargs={"action_format": "tools"}
            )
            (outcome,) = episodes.play([2]).outcomes
    finally:
        engine.close()
    assert outcome.failure is None
    calls = outcome.session.calls
    for call in calls:
        assert len(call.choices) == len(call.token_ids)
        assert all(
            among is None or t in among
            for t, among in zip(call.token_ids, call.choices, strict=True)
        )
        sizes = [len(among) for among in call.choices if among is not None]
        assert 1 in sizes and any(n > 1 for n in sizes)  # the JSON forced, a value chosen
    (segment,) = outcome.trajectory.samples
    sampled = [t for call in calls for t in call.token_ids]
    recorded = [c for call in calls for c in call.choices]
    trained = [t for t, m in zip(segment.token_ids, segment.loss_mask, strict=True) if m]
    assert trained == [t for t, c in zip(sampled, recorded, strict=True) if c is None or len(c) > 1]
    assert [
        c for c, t in zip(segment.choices, segment.turn_of_token, strict=True) if t >= 0
    ] == recorded


# ------------------------------------------------------------------------------ faults
HELLO = [{"role": "user", "content": "hi"}]


async def raises_after_a_call(env, llm):
    env.reset()
    await llm.chat.completions.create(model="m", messages=HELLO, max_tokens=4)
    raise RuntimeError("the agent's own bug")


async def hangs_awaiting(env, llm):
    env.reset()
    await llm.chat.completions.create(model="m", messages=HELLO, max_tokens=4)
    await asyncio.sleep(3600)


async def hangs_in_sync_code(env, llm):
    env.reset()
    await llm.chat.completions.create(model="m", messages=HELLO, max_tokens=4)
    time.sleep(20)  # a synchronous wait that never yields: its loop cannot cancel it


async def never_calls(env, llm):
    env.reset()
    env.step("<answer>Up</answer>")


async def calls_a_thousand_times(env, llm):
    env.reset()
    for _ in range(1000):
        await llm.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "again"}], max_tokens=1
        )


@pytest.mark.parametrize(
    ("agent", "failure", "deadline_s"),
    [
        (raises_after_a_call, "raised", 120),
        (hangs_awaiting, "deadline", 5),
        (hangs_in_sync_code, "deadline", 5),
        (never_calls, "no_calls", 120),
        (calls_a_thousand_times, "call_limit", 120),
    ],
)
def test_each_agent_fault_is_counted_and_nothing_of_it_is_trained_on(
    gateway, agent, failure, deadline_s
):
    episodes = AgentEpisodes(
        agent, "Sokoban-v0", gateway, group_size=2, deadline_s=deadline_s, max_calls=5
    )
    started = time.monotonic()
    batch = episodes.play([0])
    assert batch.failures == {failure: 2}
    assert batch.trajectories == []
    if agent is calls_a_thousand_times:
        assert [o.calls for o in batch.outcomes] == [5, 5]
    if agent is hangs_in_sync_code:  # the run stopped waiting for the stuck threads
        assert time.monotonic() - started < 20
        assert all(o.session.ended == "deadline" for o in batch.outcomes)


def test_a_failed_episode_is_trained_on_only_with_the_failure_reward_asked(gateway):
    episodes = AgentEpisodes(
        raises_after_a_call, "Sokoban-v0", gateway, group_size=2, failure_reward=-1.0
    )
    batch = episodes.play([0])
    assert batch.failures == {"raised": 2}
    assert [t.episode_return for t in batch.trajectories] == [-1.0, -1.0]
    assert all(t.finish_reason == "aborted" and not t.success for t in batch.trajectories)


def test_an_ended_session_refuses_calls_with_410_and_an_unknown_one_with_404(gateway):
    session = gateway.open_session()
    gateway.end_session(session, "finished")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = httpx.post(f"{gateway.base_url(session)}/chat/completions", json=body)
    assert refused.status_code == 410
    assert "has ended (finished)" in refused.json()["error"]["message"]
    unknown = httpx.post(f"{gateway.url}/sessions/nope/v1/chat/completions", json=body)
    assert unknown.status_code == 404


def test_n_above_one_is_refused_with_a_400_that_says_why(gateway):
    session = gateway.open_session()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 2}
    refused = httpx.post(f"{gateway.base_url(session)}/chat/completions", json=body)
    assert refused.status_code == 400
    assert "one reply a call" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nocolon", "must be 'package.module:function'"),
        ("no_such_package_xyz:agent", "no module named 'no_such_package_xyz'"),
        ("tests.trainer.agents.test_gateway_sessions:tool_agnet", "did you mean tool_agent"),
        ("json:loads", "loads is not async"),
    ],
)
def test_a_bad_agent_name_says_what_is_wrong(spec, message):
    with pytest.raises(ValueError, match=message):
        load_agent(spec)
