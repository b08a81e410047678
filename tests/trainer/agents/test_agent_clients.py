"""Three client libraries drive a tool-calling agent through the gateway, each as its users
write one: the ``openai`` SDK (chat, streaming, tools), the OpenAI Agents SDK (chat
completions, tracing off) and LangGraph with ``langchain-openai``. Each agent moves in Sokoban
by calling a ``move`` tool, with ``tool_choice="required"`` so that the tiny random model's
every reply is a schema-valid call (the gateway's grammar-constrained decoding)."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from trainer.agents.agent_episodes import AgentEpisodes

pytest.importorskip("openai")

TURNS = 3
DIRECTIONS = ["Up", "Down", "Left", "Right"]
Direction = Literal["Up", "Down", "Left", "Right"]


def _play(gateway, agent, **kwargs):
    episodes = AgentEpisodes(agent, "Sokoban-v0", gateway, group_size=2, **kwargs)
    batch = episodes.play([4])
    assert batch.failures == {}, [o.detail for o in batch.outcomes]
    for outcome in batch.outcomes:
        calls = outcome.session.calls
        assert len(calls) == TURNS == len(outcome.trajectory.turns)
        assert all(call.reply_message["tool_calls"] for call in calls)
        assert all(turn.metrics["action_is_valid"] for turn in outcome.trajectory.turns)
    return batch


async def openai_streaming_agent(env, llm):
    """The ``openai`` SDK, streaming: the deltas of each call are put together by hand."""
    obs, info = env.reset(options=None)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "move",
                "description": "Push or walk one square.",
                "parameters": {
                    "type": "object",
                    "properties": {"direction": {"type": "string", "enum": DIRECTIONS}},
                    "required": ["direction"],
                },
            },
        }
    ]
    messages = [{"role": "system", "content": info["instruction"]}]
    messages.append({"role": "user", "content": obs})
    for _ in range(TURNS):
        stream = await llm.chat.completions.create(
            model="policy",
            messages=messages,
            tools=tools,
            tool_choice="required",
            parallel_tool_calls=False,
            stream=True,
        )
        name, arguments, call_id = "", "", ""
        async for chunk in stream:
            for delta in chunk.choices[0].delta.tool_calls or []:
                call_id = delta.id or call_id
                name += delta.function.name or ""
                arguments += delta.function.arguments or ""
        direction = json.loads(arguments)["direction"]
        assert name == "move"
        obs, reward, terminated, truncated, _ = env.step(f"<answer>{direction}</answer>")
        call = {"id": call_id, "type": "function"}
        call["function"] = {"name": name, "arguments": arguments}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": f"Reward: {reward:g}\n{obs}"},
        ]


def test_the_openai_sdk_streams_tool_calls_through_the_gateway(gateway):
    batch = _play(gateway, openai_streaming_agent)
    for outcome in batch.outcomes:
        calls = outcome.session.calls
        assert [call.continues for call in calls] == [None, 0, 1]  # the history re-sent
        assert len(outcome.trajectory.samples) == 1


async def openai_agents_sdk_agent(env, llm):
    """The OpenAI Agents SDK: chat completions on the given client, tracing off."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    obs, info = env.reset()
    seen = {"obs": obs}

    @function_tool
    def move(direction: Direction) -> str:
        """Push or walk one square."""
        obs, reward, *_ = env.step(f"<answer>{direction}</answer>")
        seen["obs"] = obs
        return f"Reward: {reward:g}\n{obs}"

    agent = Agent(
        name="pusher",
        instructions=info["instruction"],
        tools=[move],
        model=OpenAIChatCompletionsModel(model="policy", openai_client=llm),
        model_settings=ModelSettings(
            tool_choice="required", parallel_tool_calls=False, max_tokens=48
        ),
        tool_use_behavior="stop_on_first_tool",
    )
    for _ in range(TURNS):
        await Runner.run(agent, seen["obs"])


def test_the_openai_agents_sdk_drives_a_tool_agent_through_the_gateway(gateway):
    pytest.importorskip("agents", reason="pip install openai-agents")
    _play(gateway, openai_agents_sdk_agent)


async def langgraph_agent(env, llm):
    """LangGraph: a model node and an act node, the model a ``langchain-openai`` ChatOpenAI
    pointed at the gateway (``base_url`` is all it is given)."""
    from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph

    obs, info = env.reset()

    @tool
    def move(direction: Direction) -> str:
        """Push or walk one square."""
        return direction

    model = ChatOpenAI(
        model="policy", base_url=str(llm.base_url), api_key="unused", max_tokens=48
    ).bind_tools([move], tool_choice="required", parallel_tool_calls=False)

    # no annotations: LangGraph reads them, and this module's are strings it cannot resolve
    async def think(state):
        return {"messages": [await model.ainvoke(state["messages"])]}

    def act(state):
        call = state["messages"][-1].tool_calls[0]
        obs, reward, *_ = env.step(f"<answer>{call['args']['direction']}</answer>")
        return {"messages": [ToolMessage(f"Reward: {reward:g}\n{obs}", tool_call_id=call["id"])]}

    def next_node(state):
        moves = sum(isinstance(m, ToolMessage) for m in state["messages"])
        return END if moves >= TURNS else "think"

    graph = StateGraph(MessagesState)
    graph.add_node("think", think)
    graph.add_node("act", act)
    graph.add_edge(START, "think")
    graph.add_edge("think", "act")
    graph.add_conditional_edges("act", next_node)
    start = [SystemMessage(info["instruction"]), HumanMessage(obs)]
    await graph.compile().ainvoke({"messages": start})


def test_langgraph_with_langchain_openai_drives_a_tool_agent_through_the_gateway(gateway):
    pytest.importorskip("langgraph", reason="pip install langgraph langchain-openai")
    pytest.importorskip("langchain_openai", reason="pip install langchain-openai")
    batch = _play(gateway, langgraph_agent)
    for outcome in batch.outcomes:  # the graph re-sends its messages: one segment
        assert [call.continues for call in outcome.session.calls] == [None, 0, 1]
