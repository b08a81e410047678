"""Parsing an agent's reply into env actions.

An LLM agent answers with free text. Envs take their action out of an answer tag, by default
``<answer>...</answer>`` with an optional ``<think>...</think>`` first (case-insensitive), and split
it into several actions at ``||`` when the env allows more than one per turn (as RAGEN does).

Example:
    >>> fmt = AnswerFormat()
    >>> fmt.extract("<think>box is left</think> <answer>Left || Up</answer>")
    ['Left', 'Up']
    >>> fmt.extract("Left") is None
    True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field


@functools.cache
def _tag_pattern(tag: str) -> re.Pattern[str]:
    return re.compile(rf"<(/?){re.escape(tag)}>", re.IGNORECASE)


def tag_contents(text: str, tag: str) -> list[str]:
    """The contents of every ``<tag>...</tag>`` in ``text``, left to right (case-insensitive).

    What ``re.findall(r"<tag>(.*?)</tag>", text, re.I | re.S)`` returns, in one pass: a tag
    runs from an opening to the first closing after it (an opening inside is content). The
    regex retries each opening that has no closing after it, so ``"<answer>" * 12_000`` took
    it over 20 s; this reads each tag once.

    Example:
        >>> tag_contents("<answer>1</answer> <ANSWER>x<answer>2</answer> <answer>3", "answer")
        ['1', 'x<answer>2']
    """
    contents, start = [], None
    for match in _tag_pattern(tag).finditer(text):
        closing = bool(match.group(1))
        if start is None and not closing:
            start = match.end()
        elif start is not None and closing:
            contents.append(text[start : match.start()])
            start = None
    return contents


@dataclass(frozen=True)
class AnswerFormat:
    """How an env reads actions out of a reply.

    Args:
        tag: name of the tag holding the answer (``answer`` reads ``<answer>...</answer>``).
            ``None`` takes the whole reply as the answer.
        think_tag: name of an optional reasoning tag allowed before the answer, or ``None``.
        strict: if True, nothing but whitespace may stand around the think and answer tags;
            if False, the last answer tag anywhere in the reply counts.
        separator: splits one answer into several actions; ``None`` keeps it whole.
        max_actions: most actions one reply may carry; the env executes the first
            ``max_actions`` of a reply whose parts are all valid actions and drops the rest.
    """

    tag: str | None = "answer"
    think_tag: str | None = "think"
    strict: bool = True
    separator: str | None = "||"
    max_actions: int = 1
    _pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)
    _tags: tuple[str, str] = field(init=False, repr=False, compare=False, default=("", ""))

    def __post_init__(self) -> None:
        if self.max_actions < 1:
            raise ValueError(f"AnswerFormat.max_actions must be >= 1, got {self.max_actions}")
        if self.tag is None:
            return
        object.__setattr__(self, "_tags", (f"<{self.tag}>", f"</{self.tag}>"))
        if not self.strict:  # the last tag anywhere: read by tag_contents
            return
        # a tag's content may not contain its own closing tag ("tempered" dot)
        answer = rf"<{self.tag}>((?:(?!</{self.tag}>).)*)</{self.tag}>"
        think_body = rf"(?:(?!</{self.think_tag}>).)*"
        think = (
            rf"(?:<{self.think_tag}>{think_body}</{self.think_tag}>\s*)?" if self.think_tag else ""
        )
        pattern = rf"\s*{think}{answer}\s*"
        object.__setattr__(self, "_pattern", re.compile(pattern, re.IGNORECASE | re.DOTALL))

    def answer_text(self, reply: str) -> str | None:
        """Returns the text inside the answer tag, or ``None`` if the reply has none."""
        if self.tag is None:
            return reply
        if self.strict:
            # the common reply, "<answer>Up</answer>", read without the regex (a third of a
            # step of the fastest adapted games): no "<" inside means no closing or think tag
            opening, closing = self._tags
            if reply.startswith(opening) and reply.endswith(closing):
                inner = reply[len(opening) : -len(closing)]
                if "<" not in inner:
                    return inner
            match = self._pattern.fullmatch(reply)
            return match.group(1) if match else None
        contents = tag_contents(reply, self.tag)
        return contents[-1] if contents else None

    def extract(self, reply: str) -> list[str] | None:
        """Returns every stripped action string of a reply, or ``None`` if it has no answer.

        An empty part (``"Up || "``) makes the whole answer unparsable. The list is not cut
        to ``max_actions``: the env checks every part, then executes the first ones.
        """
        answer = self.answer_text(reply)
        if answer is None:
            return None
        if not self.separator:  # one action: the adapted games' path, kept short
            action = answer.strip()
            return [action] if action else None
        parts = answer.split(self.separator)
        actions = [part.strip() for part in parts]
        if not all(actions):
            return None
        return actions

    def wrap(self, actions: str | list[str]) -> str:
        """Formats actions as a reply this format accepts (used by reference policies)."""
        if isinstance(actions, str):
            actions = [actions]
        sep = f" {self.separator} " if self.separator else ""
        body = sep.join(actions)
        return f"<{self.tag}>{body}</{self.tag}>" if self.tag else body

    def describe(self) -> str:
        """One sentence for an instruction: how to write an answer in this format."""
        if self.tag is None:
            return "Reply with the action only."
        text = f"Reply with your action inside <{self.tag}></{self.tag}>"
        if self.think_tag:
            text += (
                f", optionally after brief reasoning inside <{self.think_tag}></{self.think_tag}>"
            )
        if self.max_actions > 1 and self.separator:
            text += f"; up to {self.max_actions} actions separated by '{self.separator}'"
        return text + "."
