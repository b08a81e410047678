"""``MCPToolsEnv``: find a fact by calling the tools of a local MCP server, then answer.

Each reset draws a small office (order files, project notes, price and email tables) and a
question about it that takes 1 to 3 tool calls; the env loads that data into its MCP server
(``environments.mcp_tools.server``, a real stdio server written with the ``mcp`` SDK) and lists
the server's tools, with their argument schemas, in the instruction. The agent replies
``call[TOOL]{JSON arguments}`` to call a tool and see its result (or its error), or
``answer[TEXT]`` to answer: 1 if right, else 0, and the episode ends. Calls earn nothing.

The server is started at the first reset (about a second) and reused by every later episode;
``close()`` stops it (see ``environments.mcp_tools.client`` for what happens to the server of
an env dropped without ``close()``).

Example:
    >>> env = MCPToolsEnv(difficulty="easy")
    >>> obs, info = env.reset(seed=0)  # starts the server
    >>> obs.startswith("Task: ")
    True
    >>> obs, *_ = env.step('<answer>call[calculate]{"expression": "6 * 7"}</answer>')
    >>> obs.split("Result:\\n")[1].splitlines()[0]
    '42'
    >>> env.close()
"""

from __future__ import annotations

import json
import random
import re
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from environments.mcp_tools.client import (
    MCPConnection,
    MCPServerError,
    ToolResult,
    ToolSpec,
    acquire,
    release,
)
from environments.mcp_tools.world import DIFFICULTIES, Task, World, generate, is_correct, numbers_in
from rollenv.action_tools import ActionTool, templated_tool
from rollenv.actions import AnswerFormat
from rollenv.text_env import TextEnv, in_text_space, shortened

SERVER_COMMAND = (sys.executable, "-m", "environments.mcp_tools.server")
#: the server's tools whose name starts with this are the env's (``admin_load_world``), never
#: listed to or called by the agent
ADMIN_PREFIX = "admin_"
SHOWN_RESULT_CHARS = 2000
_EXAMPLE_CALL = 'call[read_file]{"path": "notes/readme.txt"}'
_CALL = re.compile(r"call\[([A-Za-z_][\w.-]*)\]\s*(\{.*\})?", re.IGNORECASE | re.DOTALL)
_ANSWER = re.compile(r"answer\[(.*)\]", re.IGNORECASE | re.DOTALL)
# pydantic's validation messages end with a link to its docs: noise for an agent
_DOCS_LINK = re.compile(r"\n\s*For further information visit \S+")
# the SDK's own prefix of a failed tool's message; the observation says "Error:" already
_SDK_PREFIX = re.compile(r"^Error executing tool \S+: ")


@dataclass
class _ServerSlot:
    """The env's connection, in an object of its own so a finalizer can release it."""

    connection: MCPConnection | None = None


def _release_slot(slot: _ServerSlot) -> None:
    if slot.connection is not None:
        release(slot.connection)
        slot.connection = None


def describe_tool(tool: ToolSpec) -> str:
    """One line for the instruction: name, description and argument schema (titles dropped).

    Example:
        >>> schema = {"properties": {"path": {"title": "Path", "type": "string"}}}
        >>> describe_tool(ToolSpec("read_file", "Reads a file.", {**schema, "required": ["path"]}))
        '- read_file: Reads a file. Arguments: {"path": {"type": "string"}}; required: path'
    """
    properties = {
        name: {k: v for k, v in schema.items() if k != "title"}
        for name, schema in tool.input_schema.get("properties", {}).items()
    }
    required = tool.input_schema.get("required", [])
    line = f"- {tool.name}: {tool.description} Arguments: {json.dumps(properties)}"
    return line + (f"; required: {', '.join(required)}" if required else "")


class MCPToolsEnv(TextEnv):
    """A question about generated office data, answered through an MCP server's tools.

    Args:
        difficulty: ``easy`` (one call: a price, a quantity in an order file), ``hard`` (2-3
            calls: a project owner's email, an order's cost) or ``mixed``.
        max_actions: tool calls and the answer together; the episode is truncated after them.
        server_command: the executable and arguments that start the stdio MCP server.
        format_penalty: reward of a reply with no valid action.
        answer_format: overrides how the action is read from a reply (default: inside
            ``<answer></answer>``, never split).
        render_mode: ``"ansi"`` or ``None``.

    Raises (from ``reset``):
        MCPServerError: the server could not be started.
    """

    oracle = "environments.mcp_tools.oracle:MCPToolsOracle"

    def __init__(
        self,
        difficulty: str = "mixed",
        *,
        max_actions: int = 6,
        server_command: Sequence[str] = SERVER_COMMAND,
        format_penalty: float = -0.1,
        answer_format: AnswerFormat | dict[str, Any] | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(
            answer_format=answer_format or AnswerFormat(separator=None),
            format_penalty=format_penalty,
            max_actions=max_actions,
            render_mode=render_mode,
        )
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty={difficulty!r} is not one of {sorted(DIFFICULTIES)}")
        if max_actions < 2:
            raise ValueError(f"max_actions must be >= 2 (a call and the answer), got {max_actions}")
        if isinstance(server_command, str) or not server_command:
            raise ValueError(
                f"server_command must be a non-empty sequence of strings, got {server_command!r}"
            )
        self.difficulty = difficulty
        self.server_command = tuple(server_command)
        self._slot = _ServerSlot()
        self._finalizer = weakref.finalize(self, _release_slot, self._slot)
        self._world_loaded = False
        self._instruction: str | None = None
        self.world: World | None = None
        self.task: Task | None = None
        self.server_pid: int | None = None
        self.last_call = ""
        self.last_result = ""
        self.answer: str | None = None
        self.correct = False

    # ------------------------------------------------------------------ the server
    def connection(self) -> MCPConnection:
        """The env's live server connection, started (or taken from the idle pool) if needed."""
        slot = self._slot
        if slot.connection is None or not slot.connection.alive:
            self._drop_connection()
            slot.connection = acquire(self.server_command)
            self._world_loaded = False
        return slot.connection

    def _drop_connection(self) -> None:
        """Stops the env's server, if it has one; the next call starts another."""
        connection, self._slot.connection = self._slot.connection, None
        if connection is not None:
            connection.close()

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools the agent may call, as the server lists them."""
        return [t for t in self.connection().tools if not t.name.startswith(ADMIN_PREFIX)]

    def _load_world(self) -> None:
        """Hands the episode's data to the server (once per episode, and after a restart)."""
        loaded = self.connection().call_tool("admin_load_world", {"world": self.world.to_json()})
        if loaded.is_error:
            raise MCPServerError(f"the MCP server refused the episode's data: {loaded.text}")
        self.server_pid = int(loaded.text)
        self._world_loaded = True

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        connection = self.connection()
        if not self._world_loaded:
            self._load_world()
        return connection.call_tool(name, arguments)

    # ------------------------------------------------------------------ TextEnv
    @property
    def instruction(self) -> str:
        if self._instruction is None:
            tools = "\n".join(describe_tool(t) for t in self.tools)
            wrap = self.answer_format.wrap
            self._instruction = (
                "You answer a question about an office's files and tables by calling the tools "
                "of an MCP server. Tools:\n"
                f"{tools}\n"
                'Actions: call[TOOL]{"argument": "value"} calls a tool with JSON arguments and '
                "shows you its result or its error (no reward). answer[TEXT] gives your final "
                "answer and ends the episode: 1 if it is right, else 0. "
                f"You have {self.max_actions} actions in all; if they run out before you "
                "answer, the episode ends with 0. "
                f"{self.answer_format.describe()} "
                f"Examples: {wrap(_EXAMPLE_CALL)} {wrap('answer[42.5]')}"
            )
        return self._instruction

    @property
    def action_words(self) -> tuple[str, ...]:
        return (
            "call[list_files]{}",
            'call[read_file]{"path": "notes/readme.txt"}',
            'call[calculate]{"expression": "2 + 2"}',
            "answer[0]",
        )

    def action_tools(self) -> tuple[ActionTool, ...]:
        """The server's own tools, as it lists them, and ``answer``: a call to a server tool
        is the text action ``call[name]{arguments}``."""
        tools = [self._server_tool(spec) for spec in self.tools]
        answer = templated_tool(
            "answer",
            "Gives the final answer; the episode ends.",
            "answer[{value}]",
            {"value": {"type": "string", "minLength": 1}},
        )
        return (*tools, answer)  # fmt: skip

    @staticmethod
    def _server_tool(spec: ToolSpec) -> ActionTool:
        def from_answer(text: str) -> dict[str, Any] | None:
            call = _CALL.fullmatch(text)
            if call is None or call.group(1) != spec.name:
                return None
            try:
                arguments = json.loads(call.group(2)) if call.group(2) else {}
            except (ValueError, RecursionError):
                return None
            return arguments if isinstance(arguments, dict) else None

        return ActionTool(
            spec.name,
            spec.description,
            spec.input_schema or {"type": "object"},
            to_answer=lambda arguments: f"call[{spec.name}]{json.dumps(arguments)}",
            from_answer=from_answer,
        )

    def _new_episode(self, rng: random.Random, options: dict[str, Any] | None) -> None:
        self.world, self.task = generate(rng, self.difficulty)
        self._world_loaded = False
        self._load_world()  # now, so that a server that cannot start fails the reset
        self.last_call = self.last_result = ""
        self.answer = None
        self.correct = False

    def _reset_info(self) -> dict[str, Any]:
        return {"task_kind": self.task.kind}

    def _observation(self) -> str:
        text = f"Task: {self.task.question}"
        if self.last_call:
            text += f"\n\nLast call: {self.last_call}\nResult:\n{self.last_result}"
        if self.answer is not None:
            verdict = "That is right." if self.correct else "That is wrong."
            text += f"\n\nYour answer: {self.answer}\n{verdict}"
        text += f"\n\nActions left: {self.max_actions - self.actions_taken}"
        return in_text_space(text)

    def _parse_action(self, text: str) -> tuple[str, Any] | None:
        call = _CALL.fullmatch(text)
        if call is not None:
            try:
                arguments = json.loads(call.group(2)) if call.group(2) else {}
            except (ValueError, RecursionError):
                return None
            return ("call", (call.group(1), arguments)) if isinstance(arguments, dict) else None
        answer = _ANSWER.fullmatch(text)
        if answer is not None and answer.group(1).strip():
            return ("answer", answer.group(1).strip())
        return None

    def _apply(self, action: tuple[str, Any]) -> tuple[float, bool]:
        kind, payload = action
        if kind == "answer":
            self.answer = shortened(payload, SHOWN_RESULT_CHARS)
            self.correct = is_correct(payload, self.task.answer)
            return (1.0 if self.correct else 0.0), True
        name, arguments = payload
        self.last_call = shortened(f"{name} {json.dumps(arguments)}", SHOWN_RESULT_CHARS)
        self.last_result = self._run_tool(name, arguments)
        return 0.0, True

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        try:
            public = [t.name for t in self.tools]
            if name not in public:
                return f"Error: unknown tool {name!r}; the tools are {', '.join(public)}"
            result = self._call(name, arguments)
        except MCPServerError as error:
            # the server died or hung: drop it; the next call starts another with this world
            self._drop_connection()
            return shortened(
                f"Error: the MCP server failed ({error}); try again", SHOWN_RESULT_CHARS
            )
        text = _SDK_PREFIX.sub("", _DOCS_LINK.sub("", result.text))
        return shortened(
            f"Error: {text}" if result.is_error else text or "(empty result)", SHOWN_RESULT_CHARS
        )

    def _solved(self) -> bool:
        return self.correct

    def _failed(self) -> bool:
        return self.answer is not None and not self.correct

    def task_ignoring_replies(self) -> dict[str, str]:
        """The question handed back as the answer, and each number it contains."""
        wrap = self.answer_format.wrap
        replies = {"question as the answer": wrap(f"answer[{self.task.question}]")}
        for number in numbers_in(self.task.question):
            replies[f"answer {number} (from the question)"] = wrap(f"answer[{number}]")
        return replies

    def close(self) -> None:
        """Stops the env's MCP server process."""
        self._drop_connection()
        super().close()
