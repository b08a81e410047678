"""``Session``: the calls one agent episode made through the gateway, recorded token for token.

Each call keeps the prompt's token ids as the policy read them, the ids it sampled, their
log-probs and the weight version of each sampled token. A client that re-sends its history
(the chat so far, with the replies it was given) gets the ids it was given before: the gateway
finds the earlier call whose messages and reply the new chat starts with, and builds the new
prompt as that call's prompt, then its sampled ids, then only the new messages tokenised
(:meth:`Session.continued_chat`). Nothing the policy sampled is tokenised again.

Example:
    >>> session = Session("s1", max_calls=4)
    >>> session.calls_left
    4
    >>> session.admit() is None  # a call is let in
    True
    >>> session.close("finished")
    >>> session.admit()
    'session s1 has ended (finished): the gateway takes no more calls for it'
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RecordedCall", "Session", "same_message"]

Message = dict[str, Any]


@dataclass
class RecordedCall:
    """One model call of an episode.

    Attributes:
        index: its place among the session's calls.
        kind: ``"chat"`` (``/v1/chat/completions``) or ``"completion"`` (``/v1/completions``).
        prompt_ids: the prompt as the policy read it.
        token_ids: the ids it sampled (all of them, a stop string's too).
        logprobs: the log-prob of each sampled id under the policy that sampled it.
        weight_versions: the weight version that sampled each id.
        finish_reason: the engine's (``stop``, ``length`` or ``abort``).
        ended_ns: ``time.monotonic_ns()`` when the reply ended, before the client had it.
        continues: the index of the call whose prompt and reply this prompt extends token for
            token, or ``None`` (a prompt rendered whole).
        messages: a chat call's messages (as sent); ``None`` for a completion.
        tools: a chat call's ``tools``.
        reply_message: the assistant message the gateway answered a chat call with.
        prompt_text: a completion's text prompt (``None`` for token ids).
        reply_text: the reply's text as the client got it.
        choices: for a reply sampled within a grammar with the gateway's ``record_choices``,
            the tokens each sampled id was sampled among (``None`` where there were more);
            ``None`` when nothing was recorded.
    """

    index: int
    kind: Literal["chat", "completion"]
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    weight_versions: list[int]
    finish_reason: str
    ended_ns: int
    continues: int | None = None
    messages: list[Message] | None = None
    tools: list[Any] | None = None
    reply_message: Message | None = None
    prompt_text: str | None = None
    reply_text: str = ""
    choices: list[tuple[int, ...] | None] | None = None


def _arguments(call: Any) -> Any:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    raw = function.get("arguments", "")
    try:
        return json.loads(raw)  # spacing an agent changed does not change the call
    except (TypeError, ValueError):
        return raw


def _calls(message: Message) -> list[tuple[Any, Any, Any]]:
    return [
        (call.get("id"), call.get("function", {}).get("name"), _arguments(call))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
    ]


def same_message(sent: Message, given: Message) -> bool:
    """Whether a message a client sent stands for one the gateway gave or saw: the same role,
    text (``None`` and ``""`` alike), calls (ids, names, arguments as JSON) and call id."""
    return (
        sent.get("role") == given.get("role")
        and (sent.get("content") or "") == (given.get("content") or "")
        and _calls(sent) == _calls(given)
        and sent.get("tool_call_id") == given.get("tool_call_id")
    )


@dataclass
class Session:
    """The gateway's record of one episode.

    Args:
        id: its name in the gateway's URLs (``/sessions/<id>/v1``).
        max_calls: the most calls it may make; the next one is refused and ends it
            (``ended == "call_limit"``). ``None``: no limit.
        greedy: every call is sampled greedily (temperature 0), whatever it asks: held-out
            evaluations of an agent.
        max_tokens: a ceiling on each call's reply, whatever it asks (``None``: the context's).

    Attributes:
        calls: the calls so far, in the order they ended.
        ended: why it ended (``None`` while it runs).
    """

    id: str
    max_calls: int | None = None
    greedy: bool = False
    max_tokens: int | None = None
    calls: list[RecordedCall] = field(default_factory=list)
    ended: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _started: int = 0  # calls admitted (some may still be running)

    @property
    def calls_left(self) -> int | None:
        return None if self.max_calls is None else self.max_calls - self._started

    def admit(self) -> str | None:
        """Lets a new call in (``None``), or says why it is refused (the call past
        ``max_calls`` also ends the session)."""
        with self._lock:
            if (
                self.ended is None
                and self.max_calls is not None
                and self._started >= self.max_calls
            ):
                self.ended = "call_limit"
                return (
                    f"session {self.id} made its {self.max_calls} calls (the agent's max_calls); "
                    "it has ended and its episode is not trained on"
                )
            if self.ended is not None:
                return (
                    f"session {self.id} has ended ({self.ended}): the gateway takes no more "
                    "calls for it"
                )
            self._started += 1
            return None

    def close(self, reason: str) -> None:
        """Ends the session (a first reason is kept); later calls are refused."""
        with self._lock:
            if self.ended is None:
                self.ended = reason

    def record(self, call: RecordedCall) -> None:
        """Adds ``call`` as ended now: its ``index`` and ``ended_ns`` are set here, under the
        lock, so the calls stay in the order of their ends."""
        with self._lock:
            call.index, call.ended_ns = len(self.calls), now_ns()
            self.calls.append(call)

    def continued_chat(
        self, messages: list[Message], tools: list[Any] | None
    ) -> tuple[RecordedCall, list[Message]] | None:
        """The latest chat call whose messages, then its reply, begin ``messages`` (with the
        same ``tools``), and the messages after them; ``None`` when no call's do (the chat was
        rewritten, or it is the first): its prompt is rendered whole."""
        for call in reversed(self.calls):
            if call.kind != "chat" or call.messages is None or call.reply_message is None:
                continue
            if (call.tools or None) != (tools or None):
                continue
            seen = len(call.messages)
            if len(messages) <= seen + 1:
                continue
            if not all(
                same_message(m, g) for m, g in zip(messages[:seen], call.messages, strict=True)
            ):
                continue
            if not same_message(messages[seen], call.reply_message):
                continue
            following = messages[seen + 1 :]
            if any(m.get("role") in ("assistant", "system") for m in following):
                continue  # a reply the policy never sampled, or new rules: rendered whole
            return call, following
        return None

    def extended_by(self, prompt: list[int]) -> int | None:
        """The latest call whose prompt and sampled ids begin ``prompt``, token for token."""
        for call in reversed(self.calls):
            sequence = call.prompt_ids + call.token_ids
            if len(prompt) > len(sequence) and prompt[: len(sequence)] == sequence:
                return call.index
        return None

    def continued_completion(self, prompt: str | list[int]) -> RecordedCall | None:
        """The latest completion call whose prompt and reply begin ``prompt`` (its token ids,
        or its text when the prompt is text)."""
        for call in reversed(self.calls):
            if call.kind != "completion":
                continue
            if isinstance(prompt, str):
                if call.prompt_text is not None and prompt.startswith(
                    call.prompt_text + call.reply_text
                ):
                    return call
            elif prompt[: len(call.prompt_ids) + len(call.token_ids)] == (
                call.prompt_ids + call.token_ids
            ):
                return call
        return None


def now_ns() -> int:
    """The clock calls and env steps are ordered by."""
    return time.monotonic_ns()
