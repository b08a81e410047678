"""``ServePlan``: the memory ``roll-agent serve`` will use, decided before the first request.

vLLM sizes its KV cache at start and never allocates past it; a request that does not fit
waits. ``roll-agent serve`` does the same with its slot cache: ``max_num_seqs`` sequences of up
to ``max_model_len`` tokens each, allocated once (the pages become resident as they are
written), plus the step's working memory, bounded by the prefill chunk. A request beyond
``max_num_seqs`` waits in the queue; none allocates.

Example:
    >>> plan = plan_serving(
    ...     layers=30, kv_heads=3, head_dim=64, model_context=8192, weight_bytes=269_000_000,
    ...     dtype_bytes=2, max_model_len=2048, max_num_seqs=None, kv_cache_memory=1 << 30,
    ...     max_step_tokens=512, heads=9, hidden=576, intermediate=1536, vocab=49152)
    >>> plan.max_num_seqs, plan.max_model_len, plan.lowered_max_num_seqs
    (21, 2048, True)
    >>> plan.kv_cache_bytes <= 1 << 30
    True
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_NUM_SEQS",
    "ServePlan",
    "ServePlanError",
    "machine_memory",
    "parse_memory",
    "plan_serving",
]

DEFAULT_MAX_NUM_SEQS = 64

# What the HTTP side holds, with room to spare over what a flood of connections to a FastAPI
# app under uvicorn and requests waiting for a sequence were measured to hold (the flood of
# tests/trainer/serving/test_serve_limits.py runs against a real server): a slower server has more
# connections open at once, so the flood's share is set well above an idle machine's figure.
CONNECTION_FLOOD_BYTES = 256 << 20
HELD_REQUEST_BYTES = 128 << 10


class ServePlanError(ValueError):
    """A serving configuration that cannot fit; the message names the numbers and the knob."""


_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 1 << 10,
          "mib": 1 << 20, "gib": 1 << 30}  # fmt: skip


def machine_memory() -> int:
    """This machine's memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def parse_memory(text: str, total: int | None = None) -> int:
    """``--kv-cache-memory``: a size (``"4GB"``, ``"512MiB"``, bytes) or a fraction of the
    machine's memory (``"0.25"``).

    Example:
        >>> parse_memory("1.5GB"), parse_memory("512MiB"), parse_memory("0.5", total=1000)
        (1500000000, 536870912, 500)

    Raises:
        ServePlanError: neither.
    """
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ServePlanError(
            f"--kv-cache-memory {text!r} is neither a size (4GB, 512MiB) nor a fraction of "
            "the machine's memory (0.25)"
        )
    value = float(match.group(1))
    if not unit and 0 < value <= 1:
        return int(value * (total if total is not None else machine_memory()))
    return int(value * _UNITS[unit])


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


@dataclass(frozen=True)
class ServePlan:
    """What the server holds, in bytes, and the limits that keep it there.

    Attributes:
        max_model_len: the most tokens a request may hold, prompt and reply.
        max_num_seqs: requests generated at once; more wait.
        lowered_max_num_seqs: the default of :data:`DEFAULT_MAX_NUM_SEQS` was lowered to fit
            the KV cache budget.
        cache_rows: rows of the KV cache (``max_num_seqs`` and one to admit into).
        bytes_per_token: one cached token position, keys and values of every layer.
        kv_cache_bytes: the whole cache, ``cache_rows x max_model_len x bytes_per_token``.
        kv_cache_budget: what the cache was allowed.
        weight_bytes: the weights as served, packed copies included.
        step_bytes: the largest forward pass's working memory (hidden states, the MLP's
            activations, a prefill chunk's attention scores, the logits).
        max_step_tokens: the most tokens a pass runs (the prefill chunk).
        max_waiting: the most requests waiting for a sequence; more get a 503 at once.
        http_bytes: what the HTTP side may hold: a flood of connections answered at once,
            and every request running or waiting.
    """

    max_model_len: int
    max_num_seqs: int
    lowered_max_num_seqs: bool
    cache_rows: int
    bytes_per_token: int
    kv_cache_bytes: int
    kv_cache_budget: int
    weight_bytes: int
    step_bytes: int
    max_step_tokens: int
    max_waiting: int
    http_bytes: int

    def total_bytes(self, resident_bytes: int, copies_bytes: int = 0) -> int:
        """The most the process holds: ``resident_bytes`` (what it holds once started: the
        libraries, the weights and the KV cache, allocated whole), the weight copies decode
        steps make when first used, a step's working memory and the HTTP side."""
        return resident_bytes + copies_bytes + self.step_bytes + self.http_bytes

    def describe(self, resident_bytes: int, copies_bytes: int = 0) -> str:
        """The lines ``roll-agent serve`` prints at start."""
        total = self.total_bytes(resident_bytes, copies_bytes)
        lines = [
            f"Memory plan: at most {_gb(total)}: the process now {_gb(resident_bytes)} (the "
            f"weights {_gb(self.weight_bytes)} and the KV cache {_gb(self.kv_cache_bytes)} in "
            f"it), weight copies for decode steps {_gb(copies_bytes)}, a step's working memory "
            f"{_gb(self.step_bytes)}, HTTP connections and requests {_gb(self.http_bytes)}",
            f"  KV cache: {self.max_num_seqs} sequences x {self.max_model_len:,} tokens x "
            f"{self.bytes_per_token:,} B (budget {_gb(self.kv_cache_budget)}, "
            "--kv-cache-memory)",
            f"  --max-model-len {self.max_model_len}, --max-num-seqs {self.max_num_seqs}, "
            f"prefill chunk {self.max_step_tokens} tokens a step; up to {self.max_waiting} "
            "more requests wait (--max-waiting), beyond that 503",
        ]
        if self.lowered_max_num_seqs:
            lines.append(
                f"  --max-num-seqs lowered from {DEFAULT_MAX_NUM_SEQS} to {self.max_num_seqs} "
                "to fit the budget: lower --max-model-len or raise --kv-cache-memory for more"
            )
        return "\n".join(lines)


def plan_serving(
    *,
    layers: int,
    kv_heads: int,
    head_dim: int,
    heads: int,
    hidden: int,
    intermediate: int,
    vocab: int,
    model_context: int,
    weight_bytes: int,
    dtype_bytes: int,
    max_model_len: int | None,
    max_num_seqs: int | None,
    kv_cache_memory: int,
    max_step_tokens: int,
    max_waiting: int = 1024,
) -> ServePlan:
    """Chooses the limits and checks they fit.

    Args:
        layers, kv_heads, head_dim, heads, hidden, intermediate, vocab: the model's shape.
        model_context: the model's context length (the most ``max_model_len`` may be).
        weight_bytes: the weights as the engine holds them.
        dtype_bytes: bytes of one cached key or value element.
        max_model_len: asked for (``None``: the model's context).
        max_num_seqs: asked for (``None``: :data:`DEFAULT_MAX_NUM_SEQS`, lowered to what the
            budget holds).
        kv_cache_memory: the KV cache's budget in bytes.
        max_step_tokens: the most tokens one forward pass runs.
        max_waiting: the most requests waiting for a sequence.

    Raises:
        ServePlanError: a limit out of range, or a cache that cannot fit its budget.
    """
    if max_model_len is None:
        max_model_len = model_context
    if not 2 <= max_model_len <= model_context:
        raise ServePlanError(
            f"--max-model-len must be in [2, {model_context}] (the model's context length), "
            f"got {max_model_len}"
        )
    if max_num_seqs is not None and max_num_seqs < 1:
        raise ServePlanError(f"--max-num-seqs must be >= 1, got {max_num_seqs}")
    if kv_cache_memory <= 0:
        raise ServePlanError(f"--kv-cache-memory must be positive, got {kv_cache_memory}")
    bytes_per_token = 2 * layers * kv_heads * head_dim * dtype_bytes + 8  # and its token id
    row = max_model_len * bytes_per_token
    # one row more than the running ones: a request is admitted into it
    fits = kv_cache_memory // row - 1
    if fits < 1:
        raise ServePlanError(
            f"--kv-cache-memory {_gb(kv_cache_memory)} cannot hold one sequence of "
            f"--max-model-len {max_model_len} tokens ({_gb(2 * row)} with the row a request is "
            "admitted into); lower --max-model-len or raise --kv-cache-memory"
        )
    lowered = False
    if max_num_seqs is None:
        max_num_seqs = min(DEFAULT_MAX_NUM_SEQS, fits)
        lowered = max_num_seqs < DEFAULT_MAX_NUM_SEQS
    elif max_num_seqs > fits:
        raise ServePlanError(
            f"--max-num-seqs {max_num_seqs} at --max-model-len {max_model_len} needs a KV cache "
            f"of {_gb((max_num_seqs + 1) * row)} but --kv-cache-memory is "
            f"{_gb(kv_cache_memory)} (it holds {fits}); lower --max-num-seqs or "
            "--max-model-len, or raise --kv-cache-memory"
        )
    if max_step_tokens <= max_num_seqs:
        raise ServePlanError(
            f"--max-step-tokens ({max_step_tokens}) must exceed --max-num-seqs "
            f"({max_num_seqs}): a step decoding every sequence must leave room for a prompt"
        )
    # float32 working memory of the largest pass: hidden states and residuals, q/k/v, the MLP's
    # gate, up and product, a prefill chunk's attention scores against the whole context,
    # the mask, and the logits of every row
    tokens = max_step_tokens
    activations = 4 * tokens * (4 * hidden + (heads + 2 * kv_heads) * head_dim + 3 * intermediate)
    scores = 4 * heads * tokens * max_model_len + tokens * max_model_len
    logits = 4 * 3 * max_num_seqs * vocab  # logits, log-softmax and the sampling's copy
    return ServePlan(
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        lowered_max_num_seqs=lowered,
        cache_rows=max_num_seqs + 1,
        bytes_per_token=bytes_per_token,
        kv_cache_bytes=(max_num_seqs + 1) * row,
        kv_cache_budget=kv_cache_memory,
        weight_bytes=weight_bytes,
        step_bytes=activations + scores + logits,
        max_step_tokens=max_step_tokens,
        max_waiting=max_waiting,
        http_bytes=CONNECTION_FLOOD_BYTES + (max_num_seqs + max_waiting) * HELD_REQUEST_BYTES,
    )
