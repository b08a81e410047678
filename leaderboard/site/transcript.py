"""An episode as the viewer steps through it: turn 0 is the reset observation, turn k the k-th
reply, the observation after it, its reward and the return so far.

Example:
    >>> from leaderboard.records import EpisodeRecord, TurnRecord
    >>> turn = TurnRecord(reply="<answer>Right</answer>", observation="P_\\nOG", reward=1.0)
    >>> episode = EpisodeRecord("FrozenLake-v0", 0, "Walk.", "_P\\nOG", (turn,), True, 1.0,
    ...                         "terminated", 0.1)
    >>> [(view.index, view.reward, view.total) for view in turns_of(episode)]
    [(0, None, 0.0), (1, 1.0, 1.0)]
    >>> reply_of("<think>add</think><answer>```python\\nx = 1\\n```</answer>", "code").code
    'x = 1'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from leaderboard.records import EpisodeRecord
from leaderboard.site.grids import Grid, Text, family_of, segments

__all__ = ["Reply", "TurnView", "reply_of", "turns_of"]

_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.IGNORECASE | re.DOTALL)
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"^\s*```[\w+-]*[ \t]*\n(.*?)\n?```\s*$", re.DOTALL)


@dataclass(frozen=True)
class Reply:
    """An agent's reply as written, and for code envs the program inside its answer.

    Attributes:
        text: the reply exactly as the env read it.
        thinking: what the reply put inside ``<think>``, if anything.
        code: the program inside ``<answer>`` (code envs only), else ``None``.
    """

    text: str
    thinking: str | None = None
    code: str | None = None


@dataclass(frozen=True)
class TurnView:
    """One step of the viewer.

    Attributes:
        index: 0 for the reset, k for the k-th reply.
        reply: the reply that made this turn (``None`` for turn 0).
        observation: what the env showed, cut into boards and text.
        reward: this turn's reward (``None`` for turn 0).
        total: the return up to and including this turn.
        metrics: the step's metrics.
        prompt_tokens: the prompt's tokens for this reply.
        reply_tokens: the reply's tokens.
    """

    index: int
    reply: Reply | None
    observation: list[Grid | Text]
    reward: float | None
    total: float
    metrics: Mapping[str, Any] = field(default_factory=dict)
    prompt_tokens: int = 0
    reply_tokens: int = 0


def turns_of(episode: EpisodeRecord) -> list[TurnView]:
    """The viewer's turns of ``episode``, the reset first."""
    family = family_of(episode.env_id)
    views = [TurnView(0, None, segments(episode.env_id, episode.first_observation), None, 0.0)]
    total = 0.0
    for index, turn in enumerate(episode.turns, start=1):
        total += turn.reward
        views.append(
            TurnView(
                index=index,
                reply=reply_of(turn.reply, family),
                observation=segments(episode.env_id, turn.observation),
                reward=turn.reward,
                total=total,
                metrics=dict(turn.metrics),
                prompt_tokens=turn.prompt_tokens,
                reply_tokens=turn.reply_tokens,
            )
        )
    return views


def reply_of(text: str, family: str) -> Reply:
    """A reply, with its thinking and, in a code env, its program picked out."""
    thinking = _THINK.search(text)
    reply = Reply(text, thinking[1].strip() if thinking else None)
    if family != "code":
        return reply
    answer = _ANSWER.search(text)
    if answer is None:
        return reply
    code = answer[1]
    fenced = _FENCE.match(code)
    code = (fenced[1] if fenced else code).strip("\n")
    return Reply(text, reply.thinking, code)
