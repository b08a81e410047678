"""Training samples from an agent episode's calls: one sample per segment of calls that extend
each other token for token.

A call whose prompt begins with an earlier call's whole sequence (its prompt, then its sampled
ids) continues that sequence, as a full-context episode of the built-in env manager does: the
new prompt tokens (the tool results, the next user message) join it untrained and the new
reply's ids join it trained on. A call whose prompt extends no earlier sequence (the agent
summarised or rewrote its context, or keeps two conversations) starts a segment of its own.
Every segment is a :class:`~trainer.rollout.trajectory.Sample` of the episode's trajectory, so
the episode's advantage reaches each of them, as a window-mode episode's reaches each turn's.

A reply sampled within a grammar whose choices the gateway recorded
(:attr:`~trainer.agents.session.RecordedCall.choices`) keeps them in its sample: each token is
trained on among the tokens it was sampled among, and a token the grammar forced (its only
choice) is not trained on at all: the policy decided nothing there.

Each call's tokens are credited to the env step that followed it (``turn_of_token``): the
number of steps that began before the call ended. Calls after the last step go to the last
step; GiGPO groups those steps by their anchors, as for any episode.

Example:
    >>> from trainer.agents.session import RecordedCall
    >>> first = RecordedCall(0, "chat", [1, 2], [3, 4], [-0.1, -0.2], [0, 0], "stop", 10)
    >>> second = RecordedCall(1, "chat", [1, 2, 3, 4, 5], [6], [-0.3], [0], "stop", 30)
    >>> (sample,) = samples_of_calls([first, second], step_starts_ns=[20, 40])
    >>> sample.token_ids, sample.loss_mask, sample.turn_of_token
    ([1, 2, 3, 4, 5, 6], [0, 0, 1, 1, 0, 1], [-1, -1, 0, 0, -1, 1])
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from trainer.agents.session import RecordedCall
from trainer.rollout.trajectory import Sample

__all__ = ["samples_of_calls", "turn_of_call"]


def turn_of_call(call: RecordedCall, step_starts_ns: Sequence[int]) -> int:
    """The env step a call drove: the first that began after it ended (the last step for a
    call after every step; 0 when the env never stepped)."""
    if not step_starts_ns:
        return 0
    return min(bisect.bisect_left(step_starts_ns, call.ended_ns), len(step_starts_ns) - 1)


def samples_of_calls(calls: Sequence[RecordedCall], step_starts_ns: Sequence[int]) -> list[Sample]:
    """The episode's samples, one per segment, in the order the segments started.

    Args:
        calls: the session's calls, in the order they ended.
        step_starts_ns: when each env step began (``time.monotonic_ns``), in order.
    """
    segments: list[Sample] = []
    for call in calls:
        extended = [s for s in segments if call.prompt_ids[: len(s.token_ids)] == s.token_ids]
        if extended:
            segment = max(extended, key=lambda s: len(s.token_ids))
            new_prompt = call.prompt_ids[len(segment.token_ids) :]
        else:
            segment = Sample([], [], [], [], weight_versions=[])
            segments.append(segment)
            new_prompt = call.prompt_ids
        turn = turn_of_call(call, step_starts_ns)
        n = len(call.token_ids)
        choices = call.choices if call.choices is not None else [None] * n
        if call.choices is not None and segment.choices is None:
            segment.choices = [None] * len(segment.token_ids)
        segment.token_ids += [*new_prompt, *call.token_ids]
        segment.loss_mask += [0] * len(new_prompt) + [
            0 if among is not None and len(among) == 1 else 1 for among in choices
        ]
        segment.logprobs += [0.0] * len(new_prompt) + list(call.logprobs)
        segment.turn_of_token += [-1] * len(new_prompt) + [turn] * n
        assert segment.weight_versions is not None
        segment.weight_versions += [-1] * len(new_prompt) + list(call.weight_versions)
        if segment.choices is not None:
            segment.choices += [None] * len(new_prompt) + list(choices)
    return segments
