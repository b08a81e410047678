"""New weights for replies under way: loaded between two decode steps of a running batch.

A :class:`~trainer.generation.actor.GeneratorActor` decodes a batch of replies in a thread. With
``in_flight_weights="next_turn"`` new weights wait until the batch ends, so every reply under way
is finished by the weights that began it and the episode goes on under the new ones from its
next turn. The two other modes load them between two decode steps of the running batch (the
continuous engine only), so a long reply does not hold back the update, and each token records
the version that sampled it:

* ``keep_cache``: the replies under way go on from their next token with the keys and values
  the old weights computed for their prompt and first tokens. Nothing is recomputed; the next
  tokens are sampled from a mixture of the two policies (new weights reading an old cache).
* ``recompute_prefix``: each reply under way is stopped and its prompt and tokens so far are
  read again under the new weights (one prefill each), then it goes on. The tokens after the
  update are sampled from the new policy exactly, at the cost of that prefill.

A reply sampled under a grammar (``SamplingParams.grammar``) keeps its cache in both modes: its
grammar's state cannot be carried to a new request. With ``recompute_prefix`` a stop string
that straddles the update is not seen (each part is checked alone).

``benchmarks/in_flight_weights.py`` measures the modes: how long an update waits, and how far
the log-probs the generator reports after it are from the new policy's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import torch

from trainer.generation.base import GenerationOutput, SamplingParams

__all__ = ["IN_FLIGHT_MODES", "InFlightMode", "PendingWeights", "decode_with_updates"]

InFlightMode = Literal["next_turn", "keep_cache", "recompute_prefix"]
IN_FLIGHT_MODES: tuple[str, ...] = get_args(InFlightMode)


@dataclass
class _Load:
    parts: list[tuple[Mapping[str, Any], bool]]  # (state dict or bucket, strict)
    version: int
    done: Callable[[int], None]


class PendingWeights:
    """Weight loads waiting to be applied, handed from the actor's event loop to whichever
    applies them first: the batch's thread between two decode steps, or the loop once no batch
    runs. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loads: list[_Load] = []

    def put(
        self, parts: list[tuple[Mapping[str, Any], bool]], version: int, done: Callable[[int], None]
    ) -> None:
        """Queues a load of ``parts`` as ``version``; ``done(version)`` runs once applied."""
        with self._lock:
            self._loads.append(_Load(parts, version, done))

    def apply(self, generator: Any, set_version: Callable[[int], None]) -> bool:
        """Loads every queued update into ``generator`` in order; returns whether any was."""
        with self._lock:
            loads, self._loads = self._loads, []
        for load in loads:
            for state, strict in load.parts:
                generator.update_weights(state, strict=strict)
            set_version(load.version)
            load.done(load.version)
        return bool(loads)


@dataclass
class _Reply:
    prompt: list[int]
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    choices: list[tuple[int, ...] | None] | None = None
    finish_reason: str | None = None

    def add(self, part: GenerationOutput) -> None:
        self.tokens += part.token_ids
        self.logprobs += part.logprobs
        if part.choices is not None:
            self.choices = (self.choices or []) + list(part.choices)


def decode_with_updates(
    generator: Any,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    *,
    version: Callable[[], int],
    load_pending: Callable[[], bool],
    mode: InFlightMode,
) -> list[GenerationOutput]:
    """Samples one reply per prompt on ``generator``'s stream (a
    :class:`~trainer.generation.continuous.ContinuousGenerator`), calling ``load_pending()``
    between every two decode steps; after it loaded weights, the replies under way go on as
    ``mode`` says (see the module docstring).

    Args:
        generator: a continuous engine.
        prompts: the batch's prompts.
        params: their sampling (``seed`` set: the batch's random stream).
        version: the version of the weights loaded now, stamped on each token sampled.
        load_pending: loads the weights that arrived, if any; returns whether it loaded.
        mode: ``keep_cache`` or ``recompute_prefix``.

    Returns:
        The replies in the order of ``prompts``, each with ``weight_versions``.
    """
    replies = [_Reply(list(map(int, p))) for p in prompts]
    if params.max_new_tokens == 0:
        return [GenerationOutput([], [], "length", weight_versions=[]) for _ in replies]
    stream = generator.stream(params)
    stream.submit_many([r.prompt for r in replies], range(len(replies)))
    live: set[Hashable] = set(range(len(replies)))
    while stream.busy:
        if load_pending() and mode == "recompute_prefix" and params.grammar is None:
            with torch.inference_mode():  # aborting moves rows of the cache's tensors
                _read_again(stream, replies, live, params)
        now = version()
        finished = stream.step()
        for key, _, _, _ in stream.sampled:
            replies[key].versions.append(now)
        for key, part in finished:
            reply = replies[key]
            reply.add(part)
            reply.finish_reason = part.finish_reason
            live.discard(key)
    return [
        GenerationOutput(
            r.tokens, r.logprobs, r.finish_reason, r.choices, weight_versions=r.versions
        )  # type: ignore[arg-type]
        for r in replies
    ]


def _read_again(
    stream: Any, replies: list[_Reply], live: set[Hashable], params: SamplingParams
) -> None:
    """Stops every reply whose prompt is in the cache and queues it again with its tokens so
    far appended to the prompt, so the new weights compute its whole cache."""
    for key in sorted(live):
        if stream.is_waiting(key):  # not admitted yet: nothing cached under the old weights
            continue
        part = stream.abort(key)
        reply = replies[key]
        reply.add(part)
        remaining = params.max_new_tokens - len(reply.tokens)
        # the rest of the reply, drawn from the batch's random stream (seed=None shares it)
        rest = replace(params, seed=None, max_new_tokens=remaining)
        stream.submit([*reply.prompt, *reply.tokens], key, rest)
