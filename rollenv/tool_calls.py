"""Actions as OpenAI tool calls: ``rollenv.make(env_id, action_format="tools")``.

In the ``tools`` format an env offers its actions as an OpenAI ``tools`` list
(``info["tools"]`` after the reset and every step) and takes the JSON text of an assistant
message: its ``tool_calls`` run in order. The observation of a step is the JSON text of the
messages that answer them: one ``role: tool`` message per call, with its ``tool_call_id``
(``info["tool_messages"]`` holds the same list). A message the env cannot run (no call, an
unknown tool, arguments that are not JSON or break the schema, too many calls, an id missing)
counts as an invalid text action (format penalty, ``action_is_valid`` False) and its reply says
why; a message with no call at all is answered by one ``role: user`` message, as an agent loop
would go on after a reply without calls. Nothing a message holds raises.

Each family declares its tools (``TextEnv.action_tools``) as :class:`ActionTool`: a name, a
JSON Schema of its arguments and the two ways between a call and the env's own answer text.
A call becomes that answer text, and the text env beneath plays it, so rewards, metrics, seeds
and oracles are the same in both formats. ``env.unwrapped`` is the ``ToolCallEnv``; its
``text_env`` is the text env it plays.

Example:
    >>> import json, rollenv
    >>> env = rollenv.make("Sokoban-v0", action_format="tools")
    >>> obs, info = env.reset(seed=0)
    >>> [tool["function"]["name"] for tool in info["tools"]]
    ['move']
    >>> call = {"id": "call_1", "type": "function",
    ...         "function": {"name": "move", "arguments": '{"direction": "Up"}'}}
    >>> obs, reward, terminated, truncated, info = env.step(
    ...     json.dumps({"role": "assistant", "content": None, "tool_calls": [call]}))
    >>> json.loads(obs)[0]["tool_call_id"], info["metrics"]["action_is_valid"]
    ('call_1', True)
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from rollenv.action_tools import ActionTool, choice_tool, templated_tool, text_tool
from rollenv.text_env import MAX_TEXT_LENGTH, TextEnv, in_text_space, shortened

__all__ = [
    "ACTION_FORMATS",
    "ActionTool",
    "ToolCallEnv",
    "choice_tool",
    "reply_as_message",
    "templated_tool",
    "text_tool",
    "tool_env_of",
]

#: the action formats every env offers
ACTION_FORMATS = ("text", "tools")
#: the longest ``tool_call_id`` a message may carry (OpenAI's own are about 30 characters)
MAX_CALL_ID_CHARACTERS = 256
#: how much of a bad message an error reply shows
SHOWN_CHARACTERS = 200


class MessageError(ValueError):
    """A message the env cannot run; its text is the reply the agent reads."""


@dataclass(frozen=True)
class _Call:
    id: str
    tool: ActionTool
    arguments: dict[str, Any]


def _read_message(message: Any) -> Mapping[str, Any]:
    if isinstance(message, Mapping):
        return message
    if not isinstance(message, str):
        raise MessageError(
            f"the action must be the JSON text of a message, got {type(message).__name__}"
        )
    if len(message) > MAX_TEXT_LENGTH:
        raise MessageError(f"the message is {len(message)} characters; at most {MAX_TEXT_LENGTH}")
    try:
        parsed = json.loads(message)
    except (ValueError, RecursionError):
        raise MessageError(
            "the message is not JSON: write an assistant message with tool_calls, for example "
            '{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", '
            '"function": {"name": ..., "arguments": "{...}"}}]}'
        ) from None
    if not isinstance(parsed, Mapping):
        raise MessageError(f"the message must be a JSON object, got {type(parsed).__name__}")
    return parsed


def _calls(message: Mapping[str, Any], tools: Sequence[ActionTool], max_calls: int) -> list[_Call]:
    raw = message.get("tool_calls")
    if raw is None or raw == []:
        raise MessageError("the message calls no tool: call one of " + _names(tools))
    if not isinstance(raw, list):
        raise MessageError(f"tool_calls must be a list, got {type(raw).__name__}")
    if len(raw) > max_calls:
        raise MessageError(f"{len(raw)} tool calls in one message; at most {max_calls}")
    by_name = {tool.name: tool for tool in tools}
    calls = []
    for number, entry in enumerate(raw, start=1):
        if not isinstance(entry, Mapping):
            raise MessageError(f"tool call {number} is not an object")
        call_id = entry.get("id")
        if not isinstance(call_id, str) or not call_id or len(call_id) > MAX_CALL_ID_CHARACTERS:
            raise MessageError(
                f"tool call {number} needs an id: a string of 1 to "
                f"{MAX_CALL_ID_CHARACTERS} characters"
            )
        function = entry.get("function")
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise MessageError(f"tool call {number} needs function.name")
        name = function["name"]
        if name not in by_name:
            raise MessageError(
                f"unknown tool {shortened(name, SHOWN_CHARACTERS)!r}: call one of " + _names(tools)
            )
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except (ValueError, RecursionError):
                shown = shortened(arguments, SHOWN_CHARACTERS)
                raise MessageError(f"the arguments of {name} are not JSON: {shown}") from None
        tool = by_name[name]
        problem = tool.problem(arguments)
        if problem is not None:
            raise MessageError(f"bad arguments for {name}: {problem}")
        calls.append(_Call(call_id, tool, arguments))
    if len(calls) > 1 and any(call.tool.whole_reply for call in calls):
        whole = next(call.tool.name for call in calls if call.tool.whole_reply)
        raise MessageError(f"a call to {whole} must be the only call of its message")
    return calls


def _names(tools: Sequence[ActionTool]) -> str:
    return ", ".join(tool.name for tool in tools) + "."


def _call_ids(message: Any) -> list[str]:
    """The usable ids of a message's calls, for replying to a message that failed."""
    try:
        parsed = _read_message(message)
    except MessageError:
        return []
    raw = parsed.get("tool_calls")
    if not isinstance(raw, list):
        return []
    ids = []
    for entry in raw[:16]:
        call_id = entry.get("id") if isinstance(entry, Mapping) else None
        if isinstance(call_id, str) and 0 < len(call_id) <= MAX_CALL_ID_CHARACTERS:
            ids.append(call_id)
    return ids


def _fitting(messages: list[dict[str, Any]]) -> str:
    """The messages as JSON within the Text space: while too long, every content is cut to a
    share of the room, halved until they fit (each message of a rejected call carries the
    error and the state)."""
    text = json.dumps(messages, ensure_ascii=False)
    share = MAX_TEXT_LENGTH // len(messages)
    while len(text) > MAX_TEXT_LENGTH:
        for message in messages:
            message["content"] = shortened(message["content"], share)
        text = json.dumps(messages, ensure_ascii=False)
        share //= 2
    return in_text_space(text)


class ToolCallEnv(gym.Env[str, str]):
    """A text env in the ``tools`` format (see the module docstring).

    ``rollenv.make(env_id, action_format="tools")`` builds it. It holds the text env it plays
    (``text_env``) rather than wrapping it, so that ``env.unwrapped`` speaks tool calls too and
    Gymnasium's ``check_env`` checks it as it is.

    Args:
        env: a rollenv text env, wrapped or not; it is stepped as given.
    """

    def __init__(self, env: gym.Env) -> None:
        inner = env.unwrapped
        if not isinstance(inner, TextEnv):
            raise TypeError(f"{type(inner).__name__} is not a rollenv TextEnv")
        self.env = env
        self.text_env: TextEnv = inner
        self.metadata = self.text_env.metadata
        self.render_mode = self.text_env.render_mode
        self.observation_space = self.text_env.observation_space
        self.action_space = self.text_env.action_space

    def render(self) -> str | None:
        """The text env's current observation."""
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def tools(self) -> tuple[ActionTool, ...]:
        """The tools of the current state (some envs' choices change as the episode goes)."""
        return tuple(self.text_env.action_tools())

    def openai_tools(self) -> list[dict[str, Any]]:
        """The current tools as OpenAI's ``tools`` list."""
        return [tool.openai() for tool in self.tools()]

    def max_calls(self) -> int:
        """The most calls one message may make: the env's actions per reply."""
        answer_format = self.text_env.answer_format
        return answer_format.max_actions if answer_format.separator else 1

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)  # np_random as Gymnasium seeds it, for check_env
        observation, info = self.env.reset(seed=seed, options=options)
        return observation, {**info, "tools": self.openai_tools()}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        tools = self.tools()
        try:
            calls = _calls(_read_message(action), tools, self.max_calls())
        except MessageError as error:
            return self._invalid(action, str(error))
        reply = self.reply_text(calls)
        observation, reward, terminated, truncated, info = self.env.step(reply)
        messages = [
            {"role": "tool", "tool_call_id": call.id, "content": f"Done: {call.tool.name}."}
            for call in calls
        ]
        if not info.get("metrics", {}).get("action_is_valid", True):
            observation = (
                f"The env did not accept {shortened(reply, SHOWN_CHARACTERS)!r}.\n\n{observation}"
            )
        messages[-1]["content"] = observation
        return self._answer(messages, observation, reward, terminated, truncated, info)

    def reply_text(self, calls: Sequence[_Call]) -> str:
        """The text reply the calls stand for, in the env's answer format."""
        if calls[0].tool.whole_reply:
            return calls[0].tool.to_answer(calls[0].arguments)
        answers = [call.tool.to_answer(call.arguments) for call in calls]
        return self.text_env.answer_format.wrap(answers)

    def _invalid(self, action: Any, error: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        # the text env plays a reply with no answer: the same turn, penalty and metrics as an
        # invalid text action
        observation, reward, terminated, truncated, info = self.env.step("")
        info["metrics"]["action_is_valid"] = False
        info["metrics"]["action_is_effective"] = False
        content = f"Error: {error}\n\n{observation}"
        ids = _call_ids(action)
        if ids:
            messages = [{"role": "tool", "tool_call_id": i, "content": content} for i in ids]
        else:
            messages = [{"role": "user", "content": content}]
        return self._answer(messages, observation, reward, terminated, truncated, info)

    def _answer(
        self,
        messages: list[dict[str, Any]],
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        text = _fitting(messages)
        info = {**info, "tool_messages": json.loads(text), "tools": self.openai_tools()}
        return text, reward, terminated, truncated, info


def tool_env_of(env: gym.Env) -> ToolCallEnv | None:
    """The ``ToolCallEnv`` beneath ``env``'s wrappers, or ``None`` for an env in the text
    format."""
    inner = env.unwrapped
    return inner if isinstance(inner, ToolCallEnv) else None


def reply_as_message(env: gym.Env, reply: str, call_prefix: str = "call") -> str:
    """A text reply (a reference policy's) as the assistant message that makes the same move.

    A reply that no tool stands for becomes a message with no call (its text as content).

    Example:
        >>> import json, rollenv
        >>> env = rollenv.make("Sokoban-v0", action_format="tools")
        >>> _ = env.reset(seed=0)
        >>> message = json.loads(reply_as_message(env, "<answer>Up</answer>"))
        >>> message["tool_calls"][0]["function"]
        {'name': 'move', 'arguments': '{"direction": "Up"}'}
    """
    tool_env = tool_env_of(env)
    if tool_env is None:
        raise TypeError(f"{env} does not take tool calls: make it with action_format='tools'")
    tools = tool_env.tools()
    calls: list[tuple[str, dict[str, Any]]] = []
    for tool in tools:
        arguments = tool.from_answer(reply) if tool.whole_reply else None
        if arguments is not None:
            calls = [(tool.name, arguments)]
            break
    if not calls:
        for text in tool_env.text_env.answer_format.extract(reply) or []:
            for tool in tools:
                arguments = None if tool.whole_reply else tool.from_answer(text)
                if arguments is not None:
                    calls.append((tool.name, arguments))
                    break
    message = {
        "role": "assistant",
        "content": None if calls else reply,
        "tool_calls": [
            {
                "id": f"{call_prefix}_{number}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for number, (name, arguments) in enumerate(calls, start=1)
        ],
    }
    return json.dumps(message)
