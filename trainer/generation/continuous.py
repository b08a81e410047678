"""``ContinuousGenerator``: the fast in-process backend (continuous batching, reused KV cache).

HF ``generate`` runs a fixed batch until its longest reply ends, pads every prompt to the
longest, and recomputes each prompt from its first token. In multi-turn rollouts that last
part dominates: turn k+1's prompt is turn k's prompt and reply plus a short observation. This
engine:

* keeps each sequence's keys and values in a :class:`~trainer.generation.kv_cache.SlotKVCache`
  row after its request ends, and starts a new prompt from the row sharing its longest prefix,
  so only the new tokens are run (the shared system prompt of a group is computed once too);
* runs new prompts packed, without padding, through the linear layers;
* decodes every running request in one batched step, and the moment a request finishes its row
  is released and a waiting request takes its place (continuous batching);
* runs a decode step's matmuls on MKL-packed copies of the float32 weights
  (:class:`~trainer.generation.packed_linear.PackedLinear`).

It computes with the model's own weights, rotary embedding and activation, so the numbers are
the trainer's up to float rounding (float32 log-probs within about 1e-6 of the model's own
forward; the sums run in other orders). Sampling and reported log-probabilities are those of
:func:`trainer.generation.hf.sample_next_tokens`.

Supported: Llama-family decoders (``llama``, ``mistral``, ``qwen2``), which covers the default
SmolLM2 models; others use the ``hf`` backend.

Example:
    >>> from trainer.generation import SamplingParams
    >>> from trainer.models import load_model
    >>> model, tokenizer = load_model("tiny-random", seed=0)
    >>> generator = ContinuousGenerator(model, tokenizer)
    >>> prompt = tokenizer.apply_chat_template(
    ...     [{"role": "user", "content": "Which way?"}], add_generation_prompt=True, tokenize=True
    ... )["input_ids"]
    >>> [out] = generator.generate([prompt], SamplingParams(max_new_tokens=4, seed=0))
    >>> len(out.token_ids), out.finish_reason
    (4, 'length')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.grammar import GrammarMasks
from trainer.generation.hf import (
    HFGenerator,
    check_prompts,
    prepare_request,
    sample_next_tokens,
)
from trainer.generation.kv_cache import SlotKVCache
from trainer.generation.packed_linear import PackedLinear, packing_available, row_buckets
from trainer.generation.small_batch_weights import (
    GROUP_SIZE,
    int4_available,
    rescore_top_logits,
)
from trainer.generation.stop_strings import StopStrings

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["INT4_ROWS", "SUPPORTED_MODEL_TYPES", "ContinuousGenerator", "GenerationStream"]

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2")

#: With ``quantize="int4"``, passes of at most this many tokens run on the 4-bit weights: on
#: this 2-core AVX2 machine they beat float32 up to about 32 rows and tie at 64.
INT4_ROWS = 32


@dataclass(frozen=True, eq=False)
class _Sampling:
    """How a request is sampled: its parameters, random stream, allowed tokens and stops."""

    params: SamplingParams
    rng: torch.Generator
    allowed: torch.Tensor | None
    stop: frozenset[int]
    stop_strings: StopStrings | None = None
    grammar: GrammarMasks | None = None  # the compiler of params.grammar, if it has one


@dataclass(eq=False)
class _Request:
    key: Hashable
    prompt: list[int]
    sampling: _Sampling
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish_reason: str = "length"
    computed: int = 0  # leading prompt tokens whose keys and values are in the cache
    aborted: bool = False
    matcher: Any = None  # where the reply is in its grammar (sampling.grammar's matcher)
    choices: list[tuple[int, ...] | None] | None = None  # with params.record_choices


def _choices_of(
    logits: torch.Tensor,
    allowed: torch.Tensor,
    tokens: torch.Tensor,
    logprobs: torch.Tensor,
    params: SamplingParams,
) -> tuple[list[tuple[int, ...] | None], torch.Tensor]:
    """The allowed tokens of each row that had at most ``params.record_choices`` of them, and
    the sampled tokens' log-probs, those rows' taken under the softmax over their choices:

        logprob = z[token] - logsumexp(z[choices]),   z = logits / temperature (logits, greedy)
    """
    rows_allowed = allowed.expand(logits.shape[0], -1)
    counts = rows_allowed.sum(dim=-1)
    few = counts <= params.record_choices
    z = logits.float() if params.temperature == 0 else logits.float() / params.temperature
    among = z.masked_fill(~rows_allowed, float("-inf")).log_softmax(dim=-1)
    logprobs = torch.where(few, among.gather(-1, tokens[:, None]).squeeze(-1), logprobs)
    # the (row, token) pairs of the rows with few choices, row by row, split into their rows
    ids = iter((rows_allowed & few[:, None]).nonzero()[:, 1].split(counts[few].tolist()))
    choices = [tuple(next(ids).tolist()) if small else None for small in few.tolist()]
    return choices, logprobs


class _FusedLinear(PackedLinear):
    """Linear modules that read the same input, run as one matmul: q/k/v in one and gate/up in
    one, so a layer runs four matmuls where the model's modules run seven.

    Each module's parameter becomes a view of the fused ``weight``, so in-place loads
    (``load_state_dict`` in :meth:`ContinuousGenerator.update_weights`) keep it current without
    another copy.
    """

    def __init__(
        self, modules: Sequence[torch.nn.Linear], buckets: Sequence[int], small_rows: int = 0
    ) -> None:
        weight = torch.cat([m.weight.detach() for m in modules])
        bias: torch.Tensor | None = None
        if any(m.bias is not None for m in modules):
            bias = torch.cat(
                [
                    m.bias.detach() if m.bias is not None else weight.new_zeros(m.out_features)
                    for m in modules
                ]
            )
        sizes = [m.weight.shape[0] for m in modules]
        parts = weight.split(sizes)
        bias_parts = bias.split(sizes) if bias is not None else [None] * len(modules)
        for m, w, b in zip(modules, parts, bias_parts, strict=True):
            m.weight.data = w
            if m.bias is not None:
                m.bias.data = b
        # views of the fused weight: in-place loads keep them current
        self._parts = list(zip(parts, bias_parts, strict=True))
        super().__init__(weight, bias, buckets, small_rows=small_rows)

    def separately(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Each module's output, from its own matmul. On a long prompt MKL runs the parts of
        gate/up about a fifth faster than the fused matrix with its wide output."""
        return [F.linear(x, w, b) for w, b in self._parts]


def _weights_dtype(dtype: torch.dtype | str | None, model_dtype: torch.dtype) -> torch.dtype:
    """``dtype`` as a torch dtype: ``None`` or the model's own, or bfloat16."""
    if dtype is None:
        return model_dtype
    names = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    resolved = names.get(dtype) if isinstance(dtype, str) else dtype
    if resolved not in (model_dtype, torch.bfloat16):
        allowed = ", ".join(repr(n) for n in (None, *names))
        raise ValueError(f"dtype must be one of {allowed}, got {dtype!r}")
    return resolved  # type: ignore[return-value]


def _rms_norm(norm: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """``norm(hidden)`` for a Llama RMSNorm module, as one fused op instead of its six (the
    same float32 result; a decode step runs 61 of them)."""
    weight = norm.weight
    return F.rms_norm(hidden, weight.shape, weight, norm.variance_epsilon)


def _common_prefix_length(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class _DecodeAttention:
    """Attention of rows ``first, first + 1, ...`` with one new token each, at ``positions``."""

    def __init__(self, first: int, positions: torch.Tensor) -> None:
        self.first, self.count = first, len(positions)
        self.span = int(positions.max()) + 1
        self.visible: torch.Tensor | None = None
        if int(positions.min()) + 1 < self.span:
            visible = (
                torch.arange(self.span, device=positions.device)[None, :] <= positions[:, None]
            )
            self.visible = visible[:, None, None, :]  # (rows, 1, 1, span)
        # else every row sees its whole span: no mask (SDPA runs much faster without one on a
        # single row, as one client's decode steps are; benchmarks/generation.py)

    def __call__(
        self,
        q: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        kv_heads: int,
        scale: float,
    ) -> torch.Tensor:
        rows = slice(self.first, self.first + self.count)
        heads, head_dim = q.shape[1], q.shape[2]
        # the query heads of each key/value head side by side, as if they were queries at one
        # position (no copy of the cache per query head)
        grouped = q.reshape(self.count, kv_heads, heads // kv_heads, head_dim)
        out = F.scaled_dot_product_attention(
            grouped,
            keys[rows, :, : self.span],
            values[rows, :, : self.span],
            attn_mask=self.visible,
            scale=scale,
        )
        return out.reshape(self.count, heads * head_dim)


class _PromptAttention:
    """Attention of rows ``first, first + 1, ...`` with ``lengths`` new tokens from ``starts``
    (causal: key j is visible to the query at position p when j <= p)."""

    def __init__(
        self,
        first: int,
        starts: torch.Tensor,
        lengths: torch.Tensor,
        row_of: torch.Tensor,
        column: torch.Tensor,
    ) -> None:
        """``row_of`` and ``column``: each new token's row (counted from ``first``) and its
        index among that row's new tokens."""
        device = starts.device
        self.first, self.count = first, len(starts)
        self.width = int(lengths.max())
        self.span = int((starts + lengths).max())
        self.row_of, self.column = row_of, column
        query_pos = starts[:, None] + torch.arange(self.width, device=device)[None, :]
        mask = torch.arange(self.span, device=device)[None, None, :] <= query_pos[:, :, None]
        self.mask = mask[:, None]  # (rows, 1, width, span)

    def __call__(
        self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, scale: float
    ) -> torch.Tensor:
        rows = slice(self.first, self.first + self.count)
        heads, head_dim = q.shape[1], q.shape[2]
        queries = q.new_zeros((self.count, self.width, heads, head_dim))
        queries[self.row_of, self.column] = q
        out = F.scaled_dot_product_attention(
            queries.transpose(1, 2),
            keys[rows, :, : self.span],
            values[rows, :, : self.span],
            attn_mask=self.mask,
            scale=scale,
            enable_gqa=True,
        )  # (rows, heads, width, head_dim)
        return out.transpose(1, 2)[self.row_of, self.column].reshape(-1, heads * head_dim)


class ContinuousGenerator:
    """Generates with a Llama-family transformers model, reusing keys and values across calls.

    The generator owns ``model`` (it is put in eval mode and overwritten by
    :meth:`update_weights`): give it its own copy, not the module being trained.

    Args:
        model: a ``LlamaForCausalLM``-like model (see :data:`SUPPORTED_MODEL_TYPES`).
        tokenizer: its tokenizer (the default stop token is its eos).
        device: where to run.
        max_batch_size: most requests decoded together; more wait and start as others end.
        cache_rows: sequences whose keys and values are kept (running and idle); default
            ``2 * max_batch_size + 1``, so every running episode's previous turn stays cached.
        dtype: the dtype of the weights, hidden states and key/value cache: ``None`` keeps the
            model's (float32: log-probs within ~1e-6 of the model's); ``"bfloat16"`` halves
            the bytes each decode step reads and runs the matmuls on AMX / AVX512-BF16 where
            the CPU has them, while the rotary embedding, the norms' statistics and the softmax
            are still computed in the model's dtype. Its log-probs differ from a float32
            trainer's by a few hundredths, so train with ``old_logprobs: recompute``.
        packed_weights: run decode steps on MKL-packed copies of the float32 weights (see
            :class:`~trainer.generation.packed_linear.PackedLinear`): faster, at the cost of
            one more copy of the weights per row bucket in use (8, 32, ... up to
            ``max_batch_size``). ``None``: on where the build supports it (float32 on CPU).
        quantize: ``"int4"``: passes of up to :data:`INT4_ROWS` tokens (decode steps of a
            few sequences) run the linear layers on 4-bit copies of their weights and the
            output head on an 8-bit copy whose largest logits are recomputed in float
            (:mod:`~trainer.generation.small_batch_weights`:
            an eighth of float32's bytes to read, the GGUF's own ``Q4_1`` values for
            SmolLM2's layers); prompts and larger batches keep the float32 weights.
            ``None``: no copies.
        max_context: the most tokens a sequence may hold, prompt and reply (default and
            upper bound: the model's context length).
        preallocate_cache: allocate the whole cache, ``cache_rows`` rows of ``max_context``
            tokens, at once (see :class:`~trainer.generation.kv_cache.SlotKVCache`): a
            server's memory is planned before its first request and never grows past it.

    Raises:
        ValueError: the model's architecture or ``dtype`` is not supported.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        device: str | torch.device = "cpu",
        max_batch_size: int = 32,
        cache_rows: int | None = None,
        dtype: torch.dtype | str | None = None,
        packed_weights: bool | None = None,
        quantize: str | None = None,
        max_context: int | None = None,
        preallocate_cache: bool = False,
    ) -> None:
        model_type = getattr(model.config, "model_type", None)
        if model_type not in SUPPORTED_MODEL_TYPES or hasattr(
            model.model.layers[0].self_attn, "q_norm"
        ):
            raise ValueError(
                f"the 'continuous' backend supports {', '.join(SUPPORTED_MODEL_TYPES)} models, "
                f"not {model_type!r}; use the 'hf' backend"
            )
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        # HFGenerator does the model placement, stop/pad ids and weight loading the same way.
        self._hf = HFGenerator(model, tokenizer, device=device, max_batch_size=max_batch_size)
        self.model, self.tokenizer, self.device = self._hf.model, tokenizer, self._hf.device
        self.default_stop_token_ids = self._hf.default_stop_token_ids
        self.max_batch_size = max_batch_size
        config = model.config
        # the model's own dtype: the rotary embedding and the softmax are computed in it
        self._float_dtype = next(self.model.parameters()).dtype
        self.dtype = _weights_dtype(dtype, self._float_dtype)
        if self.dtype != self._float_dtype:
            # not model.to(): that would round the rotary embedding's inv_freq buffer too
            decoder = self.model.model
            for module in (decoder.embed_tokens, decoder.layers, decoder.norm, model.lm_head):
                module.to(self.dtype)
        self._layers = list(model.model.layers)
        supported = packing_available(self.dtype, self.device)
        if packed_weights and not supported:
            raise ValueError(
                "packed_weights needs float32 weights on a CPU build of torch with MKL, "
                f"not {self.dtype} on {self.device}"
            )
        buckets = row_buckets(max_batch_size) if supported and packed_weights is not False else ()
        if quantize not in (None, "int4"):
            raise ValueError(f"quantize must be None or 'int4', got {quantize!r}")
        if quantize and not int4_available(self.device, config.hidden_size):
            raise ValueError(
                "quantize='int4' needs a CPU build of torch with _weight_int4pack_mm_for_cpu "
                f"and layers whose width divides by {GROUP_SIZE}"
            )
        self.quantize = quantize
        rows = INT4_ROWS if quantize else 0
        with torch.no_grad():
            self._qkv = [
                _FusedLinear([a.q_proj, a.k_proj, a.v_proj], buckets, small_rows=rows)
                for a in (layer.self_attn for layer in self._layers)
            ]
            self._gate_up = [
                _FusedLinear([layer.mlp.gate_proj, layer.mlp.up_proj], buckets, small_rows=rows)
                for layer in self._layers
            ]
            self._o = [
                PackedLinear(a.o_proj.weight, a.o_proj.bias, buckets, small_rows=rows)
                for a in (layer.self_attn for layer in self._layers)
            ]
            self._down = [
                PackedLinear(
                    layer.mlp.down_proj.weight, layer.mlp.down_proj.bias, buckets, small_rows=rows
                )
                for layer in self._layers
            ]
            head = model.lm_head
            # the head is tied to the GGUF's Q8_0 embedding: 4 bits would move its logits; 8
            # bits a row, with the largest logits recomputed in float (rescore_top_logits)
            self._lm_head = PackedLinear(
                head.weight, head.bias, buckets, small_rows=rows, small_format="int8"
            )
        self._linears = [*self._qkv, *self._gate_up, *self._o, *self._down, self._lm_head]
        self._heads = config.num_attention_heads
        self._kv_heads = getattr(config, "num_key_value_heads", None) or self._heads
        self._head_dim = getattr(config, "head_dim", None) or config.hidden_size // self._heads
        self._scale = self._layers[0].self_attn.scaling
        model_context = int(getattr(config, "max_position_embeddings", 1 << 20))
        if max_context is not None and not 2 <= max_context <= model_context:
            raise ValueError(
                f"max_context must be in [2, {model_context}] (the model's context), "
                f"got {max_context}"
            )
        self.cache = SlotKVCache(
            layers=len(self._layers),
            rows=cache_rows or 2 * max_batch_size + 1,
            kv_heads=self._kv_heads,
            head_dim=self._head_dim,
            max_capacity=max_context or model_context,
            dtype=self.dtype,  # at a batch of 64, reading the cache costs more than the weights
            device=self.device,
            preallocate=preallocate_cache,
        )
        self.stats = {"prompt_tokens": 0, "computed_prompt_tokens": 0, "generated_tokens": 0}
        self._stream: GenerationStream | None = None  # the one whose requests hold the rows

    @torch.inference_mode()
    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """Samples one reply per prompt (same contract as :meth:`HFGenerator.generate`).

        Requests start in order; at most ``max_batch_size`` run at once, and a finished one's
        place goes to the next waiting request in the same step.
        """
        checked, rng, allowed = prepare_request(
            prompts, params, self._hf._vocab_size(), self.device
        )
        if params.max_new_tokens == 0:
            return [GenerationOutput([], [], "length") for _ in checked]
        stream = GenerationStream(self, params, rng, allowed)
        stream._enqueue(checked, range(len(checked)), None)  # prepare_request checked them
        outputs: list[GenerationOutput | None] = [None] * len(checked)
        while stream.busy:
            for index, output in stream.step():
                outputs[index] = output
        return outputs  # type: ignore[return-value]

    @property
    def max_context(self) -> int:
        """The most tokens a sequence may hold, prompt and reply together (the model's context,
        or the cache's ``max_capacity`` when set lower)."""
        return self.cache.max_capacity

    def weight_copy_bytes(self) -> int:
        """Bytes of the weight copies decode steps make when first used (MKL packs, the
        compact copies of ``quantize``), counted before they exist: a server plans for them."""
        return sum(linear.copy_bytes() for linear in self._linears)

    def make_weight_copies(self) -> None:
        """Makes the copies :meth:`weight_copy_bytes` counts now rather than in the first decode
        steps that use them (about a second for SmolLM2's 4-bit copies: a server's first request
        would wait for it)."""
        for linear in self._linears:
            linear.make_copies()

    def stream(
        self, params: SamplingParams, *, max_step_tokens: int | None = None
    ) -> GenerationStream:
        """A :class:`GenerationStream`: requests submitted one at a time, at any step, that
        join the running batch as others leave it (an episode's next turn, without waiting for
        the other episodes' replies). Opening a stream ends the previous one.

        Args:
            params: how requests are sampled unless :meth:`GenerationStream.submit` says
                otherwise.
            max_step_tokens: the most tokens one forward pass runs (decoded ones and prompt
                tokens together): a longer prompt is read a chunk a step, so the requests
                decoding beside it keep their pace (chunked prefill). ``None``: no limit,
                every admitted prompt is read in one pass. It must exceed
                ``max_batch_size``, so that a prompt always gets a part of the pass.

        Example:
            >>> from trainer.models import load_model
            >>> model, tokenizer = load_model("tiny-random", seed=0)
            >>> stream = ContinuousGenerator(model, tokenizer).stream(
            ...     SamplingParams(max_new_tokens=3, temperature=0.0))
            >>> stream.submit([1, 2, 3], key="a")
            >>> finished = []
            >>> while stream.busy:
            ...     finished += stream.step()
            >>> [(key, len(output.token_ids)) for key, output in finished]
            [('a', 3)]
        """
        _, rng, allowed = prepare_request([], params, self._hf._vocab_size(), self.device)
        if params.max_new_tokens < 1:
            raise ValueError(f"a stream needs max_new_tokens >= 1, got {params.max_new_tokens}")
        if max_step_tokens is not None and max_step_tokens <= self.max_batch_size:
            raise ValueError(
                f"max_step_tokens ({max_step_tokens}) must exceed max_batch_size "
                f"({self.max_batch_size}): a pass decoding every running request must leave "
                "room for a prompt"
            )
        return GenerationStream(self, params, rng, allowed, max_step_tokens=max_step_tokens)

    def _stops(
        self, params: SamplingParams
    ) -> tuple[frozenset[int], StopStrings | None, GrammarMasks | None]:
        """The stop tokens, stop strings and grammar compiler of requests sampled with
        ``params``."""
        strings = StopStrings(self.tokenizer, params.stop) if params.stop else None
        stops = params.stops(self.default_stop_token_ids)
        grammar = self._hf.grammar_masks(stops) if params.grammar is not None else None
        return frozenset(stops), strings, grammar

    def _compute_shared_prefixes(self, prompts: list[list[int]], min_gain: int = 16) -> None:
        """Computes once the prefixes several prompts of one call share (a group's identical
        first prompts, the instruction every episode starts with), so that each request copies
        them instead of computing them again in the same batch."""
        if len(prompts) < 2:
            return
        order = sorted(range(len(prompts)), key=lambda i: prompts[i])
        shared = [0] * len(prompts)
        for a, b in zip(order, order[1:], strict=False):
            n = _common_prefix_length(prompts[a], prompts[b])
            shared[a], shared[b] = max(shared[a], n), max(shared[b], n)
        prefixes = {
            tuple(prompts[i][: min(n, len(prompts[i]) - 1)])
            for i, n in enumerate(shared)
            if min(n, len(prompts[i]) - 1) >= min_gain
        }
        # a prefix of another prefix comes with it
        longest = [
            p for p in prefixes if not any(len(q) > len(p) and q[: len(p)] == p for q in prefixes)
        ]
        todo = [list(p) for p in longest if self.cache.cached_length(p) < len(p) - min_gain]
        for start in range(0, len(todo), self.max_batch_size):
            chunk = todo[start : start + self.max_batch_size]
            admitted = [self.cache.admit(p + [-1]) for p in chunk]  # -1: run all of p
            self.stats["computed_prompt_tokens"] += sum(
                len(p) - s for p, (_, s) in zip(chunk, admitted, strict=True)
            )
            self._forward(
                [row for row, _ in admitted],
                [p[s:] for p, (_, s) in zip(chunk, admitted, strict=True)],
                [s for _, s in admitted],
            )
            for row, _ in reversed(admitted):  # the last rows: nothing moves
                self.cache.release(row)

    def _forward(
        self, rows: list[int], new_tokens: list[list[int]], starts: list[int]
    ) -> torch.Tensor:
        """Runs ``new_tokens[i]`` at positions ``starts[i]...`` of cache row ``rows[i]``.

        ``rows`` must be contiguous running rows. The tokens go through the linear layers
        packed, one after another; attention reads each row's cached keys and values. The
        leading rows with one new token each (decoding) and the rows after them (prompts) are
        run in one pass: together through the linear layers, each group through its own
        attention, so a decode step and the prompts admitted beside it cost one pass.

        Returns:
            ``(len(rows), vocab)`` next-token logits after each row's last new token.
        """
        device = self.device
        first, count = rows[0], len(rows)
        if rows != list(range(first, first + count)):
            raise AssertionError("rows passed to _forward must be contiguous")
        sizes = [len(t) for t in new_tokens]
        decoding = next((i for i, n in enumerate(sizes) if n != 1), count)
        lengths = torch.tensor(sizes, device=device)
        start = torch.tensor(starts, device=device)
        row_of = torch.repeat_interleave(torch.arange(count, device=device), lengths)
        column = torch.cat([torch.arange(n, device=device) for n in sizes])
        positions = start[row_of] + column
        self.cache.ensure_capacity(int((start + lengths).max()))
        token_ids = torch.tensor([t for ts in new_tokens for t in ts], device=device)
        self.cache.write_tokens(row_of + first, positions, token_ids)

        hidden = self.model.model.embed_tokens(token_ids)  # (tokens, hidden)
        float_dtype = self._float_dtype
        cos, sin = self.model.model.rotary_emb(
            torch.empty(0, dtype=float_dtype, device=device), positions[None]
        )
        cos, sin = cos[0, :, None], sin[0, :, None]  # (tokens, 1, head_dim): same for each head
        heads, kv_heads, head_dim = self._heads, self._kv_heads, self._head_dim
        # where each new token's key (and value) goes in a layer's cache seen as
        # (rows * kv_heads * capacity, head_dim): one index_copy_ instead of an index_put
        capacity = self.cache.capacity
        slots = ((row_of + first) * kv_heads)[:, None] + torch.arange(kv_heads, device=device)
        slots = (slots * capacity + positions[:, None]).reshape(-1)
        decode = _DecodeAttention(first, positions[:decoding]) if decoding else None
        prompts = (
            _PromptAttention(
                first + decoding,
                start[decoding:],
                lengths[decoding:],
                row_of[decoding:] - decoding,  # decoding rows come first, one token each
                column[decoding:],
            )
            if decoding < count
            else None
        )
        # rotate_half(x) * sin == roll(x, half) * [-sin_first_half, sin_second_half]: two ops
        # where rotate_half's slices, negation and concatenation are four, in each layer
        half = head_dim // 2
        sin = torch.cat([-sin[..., :half], sin[..., half:]], dim=-1)
        # with quantize, a pass of few tokens runs every linear layer on its 4-bit copy, whose
        # output is bfloat16: the MLP stays in it and the residual adds take it as it is, so
        # no conversion surrounds each matmul
        compact = self.quantize is not None and len(token_ids) <= INT4_ROWS
        for index, layer in enumerate(self._layers):
            residual = hidden
            normed = _rms_norm(layer.input_layernorm, hidden)
            qkv = self._qkv[index].compact(normed) if compact else self._qkv[index](normed)
            qkv = qkv.to(float_dtype).view(-1, heads + 2 * kv_heads, head_dim)
            # rotary embedding of queries and keys at once: x * cos + rotate_half(x) * sin
            qk = qkv[:, : heads + kv_heads]
            qk = torch.addcmul(qk * cos, qk.roll(half, dims=-1), sin)
            q, k, v = qk[:, :heads], qk[:, heads:], qkv[:, heads + kv_heads :]
            keys, values = self.cache.keys[index], self.cache.values[index]
            keys.view(-1, head_dim).index_copy_(0, slots, k.reshape(-1, head_dim).to(keys.dtype))
            values.view(-1, head_dim).index_copy_(0, slots, v.reshape(-1, head_dim).to(keys.dtype))
            q = q.to(keys.dtype)
            parts = []
            if decode is not None:
                parts.append(decode(q[:decoding], keys, values, kv_heads, self._scale))
            if prompts is not None:
                parts.append(prompts(q[decoding:], keys, values, self._scale))
            out = parts[0] if len(parts) == 1 else torch.cat(parts)
            if compact:
                hidden = residual + self._o[index].compact(out)
                normed = _rms_norm(layer.post_attention_layernorm, hidden)
                gate, up = self._gate_up[index].compact(normed).chunk(2, dim=-1)
                # SiLU in float32: in bfloat16 it cost agreement with float32's greedy replies
                # (227 against 248 of 256 tokens on 8 prompts)
                hidden = hidden + self._down[index].compact(layer.mlp.act_fn(gate.float()) * up)
            else:
                hidden = residual + self._o[index](out.to(hidden.dtype))
                normed = _rms_norm(layer.post_attention_layernorm, hidden)
                if prompts is None:
                    gate, up = self._gate_up[index](normed).chunk(2, dim=-1)
                else:
                    gate, up = self._gate_up[index].separately(normed)
                hidden = hidden + self._down[index](layer.mlp.act_fn(gate) * up)
        last = torch.cumsum(lengths, dim=0) - 1
        hidden = self.model.model.norm(hidden[last])
        # the head runs on one row a sequence: its 8-bit copy serves a long prompt's pass too
        if self.quantize is not None and count <= INT4_ROWS:
            head = self._lm_head
            logits = head.compact(hidden).float()
            return rescore_top_logits(logits, hidden, head.weight, head.bias)
        return self._lm_head(hidden).float()

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> None:
        """Loads new policy weights and forgets every cached prefix (computed with the old).

        ``strict=False`` loads part of the weights (a bucket of a bucketed push). Between two
        passes of a stream, a running request keeps its keys and values and goes on under the
        new weights from its next token; its row is not reused after it ends.
        """
        self._hf.update_weights(state_dict, strict=strict)
        self.cache.clear(keep_running=True)
        # a full load is the whole sync: re-pack now, so its cost counts as sync time; a partial
        # one is followed by more, so the packs are made again when next used
        for linear in self._linears:
            if strict:
                linear.repack()
            else:
                linear.drop_packs()


class GenerationStream:
    """One running batch of a :class:`ContinuousGenerator` that requests join and leave.

    :meth:`submit` queues a prompt under a key; each :meth:`step` runs one forward pass that
    decodes a token for every running request and, in the same pass, reads the prompts of the
    requests admitted in their place (up to the engine's ``max_batch_size``), then returns the
    requests that finished. A caller that turns a finished reply into a new prompt (an
    episode's next turn) submits it at once, so it never waits for the rest of a batch: the
    batch stays full instead of draining to its slowest reply.

    Requests are sampled with the stream's ``params``, from one random stream seeded by
    ``params.seed`` (the tokens drawn depend on the order of submissions, which a caller that
    submits deterministically, an env manager, keeps the same from run to run), unless
    :meth:`submit` gives a request its own parameters (a server's requests each have theirs;
    a request with its own ``seed`` draws from its own random stream).

    With ``max_step_tokens``, a pass runs at most that many tokens: the decoding requests' one
    each first, then as much of the waiting prompts as fits, so a long prompt is read over
    several passes while the others keep decoding (chunked prefill). At most one prompt is part
    read at a time; it holds the last running row.

    A request ends at a stop token, at its ``max_new_tokens``, when prompt and reply fill the
    model's context (``finish_reason`` ``"length"``), or by :meth:`abort`.

    Make one with :meth:`ContinuousGenerator.stream`; a stream is used from one thread.
    """

    def __init__(
        self,
        engine: ContinuousGenerator,
        params: SamplingParams,
        rng: torch.Generator,
        allowed: torch.Tensor | None,
        *,
        max_step_tokens: int | None = None,
    ) -> None:
        self._engine = engine
        self._own = _Sampling(params, rng, allowed, *engine._stops(params))
        self._shared: dict[SamplingParams, _Sampling] = {}  # unseeded parameters, by value
        self._max_step_tokens = max_step_tokens
        self._waiting: deque[_Request] = deque()
        self._aborted_waiting = 0
        self._running: list[_Request] = []  # _running[r] is in cache row r
        # _running[r]'s last sampled token, not yet in the cache, for each decoding row; a
        # prompt being read in chunks holds the row after them, the last one
        self._pending: list[int] = []
        self._requests: dict[Hashable, _Request] = {}  # every waiting or running one, by key
        self.sampled: list[tuple[Hashable, int, float, tuple[int, ...] | None]] = []
        """``(key, token, logprob, choices)`` of every token the last :meth:`step` sampled
        (``choices``: see ``SamplingParams.record_choices``)."""
        # a stream owns the engine's running rows: whatever an earlier call or stream left
        # running (it raised, or was dropped) is forgotten
        engine._stream = self
        engine.cache.abandon_running()
        engine.cache.begin_call()

    @property
    def busy(self) -> bool:
        """Whether requests are waiting or running."""
        return bool(self._running) or len(self._waiting) > self._aborted_waiting

    @property
    def running(self) -> int:
        """Requests being generated now, their prompt read or being read (at most the engine's
        ``max_batch_size``)."""
        return len(self._running)

    @property
    def waiting(self) -> int:
        """Requests submitted and not yet admitted."""
        return len(self._waiting) - self._aborted_waiting

    def is_waiting(self, key: Hashable) -> bool:
        """Whether the request ``key`` is queued and not yet admitted to a row."""
        request = self._requests.get(key)
        return request is not None and request not in self._running

    def submit(
        self, prompt: Sequence[int], key: Hashable, params: SamplingParams | None = None
    ) -> None:
        """Queues ``prompt``; its output comes back from :meth:`step` with ``key``.

        Args:
            prompt: the prompt's token ids.
            key: names the request in :meth:`step`'s results and :meth:`abort`; unique among
                the requests waiting or running.
            params: this request's sampling (default: the stream's).

        Raises:
            ValueError: the prompt is empty, has an id outside the vocabulary or fills the
                model's context; a bad sampling parameter; the key is in use.
        """
        self.submit_many([prompt], [key], params)

    def submit_many(
        self,
        prompts: Sequence[Sequence[int]],
        keys: Iterable[Hashable],
        params: SamplingParams | None = None,
    ) -> None:
        """Queues several prompts at once; a prefix they share (an instruction every episode
        starts with) is computed once for all of them.

        Raises:
            ValueError: as :meth:`submit`.
        """
        self._check_current()
        engine = self._engine
        if params is None:
            checked = [list(map(int, p)) for p in prompts]
            check_prompts(checked, engine._hf._vocab_size())
            sampling = None
        else:
            checked, rng, allowed = prepare_request(
                prompts, params, engine._hf._vocab_size(), engine.device
            )
            sampling = self._sampling_for(params, rng, allowed)
        context = engine.max_context
        for i, prompt in enumerate(checked):
            if len(prompt) >= context:
                raise ValueError(
                    f"prompt {i} has {len(prompt)} tokens, which leaves no room for a reply in "
                    f"the model's context of {context} tokens"
                )
        self._enqueue(checked, keys, sampling)

    def abort(self, key: Hashable) -> GenerationOutput | None:
        """Ends the request ``key`` now (its caller went away), freeing its row for the next.

        Returns:
            What it had generated, with ``finish_reason`` ``"abort"``; ``None`` if no request
            ``key`` was waiting or running.
        """
        self._check_current()
        request = self._requests.pop(key, None)
        if request is None:
            return None
        request.aborted = True
        if request not in self._running:
            self._aborted_waiting += 1  # dropped when its turn comes
        else:
            row = self._running.index(request)
            if row < len(self._pending):
                self._release(row)
            else:  # the prompt being read, in the last running row
                self._engine.cache.release(row)
                self._running.pop()
            self._engine.stats["generated_tokens"] += len(request.tokens)
        return GenerationOutput(request.tokens, request.logprobs, "abort", request.choices)

    def _sampling_for(
        self, params: SamplingParams, rng: torch.Generator, allowed: torch.Tensor | None
    ) -> _Sampling:
        """Requests with the same unseeded parameters share one :class:`_Sampling` (and the
        stream's random stream), so they are sampled together; a seeded one has its own."""
        stops = self._engine._stops(params)
        if params.seed is not None:
            return _Sampling(params, rng, allowed, *stops)
        if params not in self._shared:
            self._shared[params] = _Sampling(params, self._own.rng, allowed, *stops)
        return self._shared[params]

    def _enqueue(
        self,
        checked: list[list[int]],
        keys: Iterable[Hashable],
        sampling: _Sampling | None,
    ) -> None:
        keys = list(keys)
        if len(keys) != len(checked):
            raise ValueError(f"give one key per prompt: {len(checked)} prompts, {len(keys)} keys")
        in_use = [key for key in keys if key in self._requests]
        if in_use or len(set(keys)) < len(keys):
            raise ValueError(f"request keys must be unique among those in flight: {in_use}")
        with torch.inference_mode():
            self._engine._compute_shared_prefixes(checked)
        sampling = sampling or self._own
        matchers: list[Any] = [None] * len(checked)
        if sampling.grammar is not None:  # compiled before any request is queued: all or none
            matchers = [sampling.grammar.matcher(sampling.params.grammar) for _ in checked]
        for prompt, key, matcher in zip(checked, keys, matchers, strict=True):
            request = _Request(key, prompt, sampling, matcher=matcher)
            self._requests[key] = request
            self._waiting.append(request)

    @torch.inference_mode()
    def step(self) -> list[tuple[Hashable, GenerationOutput]]:
        """Runs one forward pass; returns ``(key, output)`` of each request that finished."""
        self._check_current()
        engine, cache = self._engine, self._engine.cache
        self.sampled = []
        decoding = len(self._pending)
        budget = self._max_step_tokens or 1 << 62
        used = decoding
        # (request, first, end): the part of its prompt this pass reads
        chunks: list[tuple[_Request, int, int]] = []
        if len(self._running) > decoding:  # the prompt being read goes on first
            request = self._running[-1]
            end = request.computed + min(
                len(request.prompt) - request.computed, max(budget - used, 1)
            )
            chunks.append((request, request.computed, end))
            used += end - request.computed
        admitted: list[_Request] = []
        while self._waiting and len(self._running) + len(admitted) < engine.max_batch_size:
            if used >= budget:
                break
            request = self._waiting.popleft()
            if request.aborted:
                self._aborted_waiting -= 1
                continue
            _, shared = cache.admit(request.prompt)
            request.computed = shared
            end = shared + min(len(request.prompt) - shared, budget - used)
            chunks.append((request, shared, end))
            admitted.append(request)
            used += end - shared
            engine.stats["prompt_tokens"] += len(request.prompt)
        if not decoding and not chunks:
            return []
        engine.stats["computed_prompt_tokens"] += sum(end - first for _, first, end in chunks)
        logits = engine._forward(
            list(range(decoding + len(chunks))),
            [[token] for token in self._pending] + [r.prompt[a:b] for r, a, b in chunks],
            [cache.lengths[row] for row in range(decoding)] + [a for _, a, _ in chunks],
        )
        self._running += admitted
        for request, _, end in chunks:
            request.computed = end
        # every chunk but perhaps the last one ends its prompt: those rows start decoding
        ready = decoding + sum(r.computed == len(r.prompt) for r, _, _ in chunks)
        self._pending = self._sample(logits[:ready], self._running[:ready])
        return self._finish_ended()

    def _sample(self, logits: torch.Tensor, requests: list[_Request]) -> list[int]:
        """Samples each request's next token, the requests sharing a sampling together."""
        groups: dict[int, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(id(request.sampling), []).append(i)
        sampled = [0] * len(requests)
        for rows in groups.values():
            s = requests[rows[0]].sampling
            part = logits if len(rows) == len(requests) else logits[rows]
            allowed = s.allowed
            if s.grammar is not None:
                allowed = s.grammar.allowed([requests[i].matcher for i in rows])
                if s.allowed is not None:
                    allowed &= s.allowed
            tokens, logprobs = sample_next_tokens(part, s.params, s.rng, allowed)
            choices: list[tuple[int, ...] | None] = [None] * len(rows)
            if s.params.record_choices and allowed is not None:
                choices, logprobs = _choices_of(part, allowed, tokens, logprobs, s.params)
            for i, token, logprob, among in zip(
                rows, tokens.tolist(), logprobs.tolist(), choices, strict=True
            ):
                request = requests[i]
                if s.grammar is not None:
                    s.grammar.advance(request.matcher, token)
                request.tokens.append(token)
                request.logprobs.append(logprob)
                if s.params.record_choices:
                    if request.choices is None:
                        request.choices = []
                    request.choices.append(among)
                sampled[i] = token
                self.sampled.append((request.key, token, logprob, among))
        return sampled

    def _finish_ended(self) -> list[tuple[Hashable, GenerationOutput]]:
        """Releases the decoding requests that ended; returns their outputs in row order."""
        context = self._engine.max_context
        finished = []
        # last row first: a release moves a later row into the freed one, already looked at
        for row in range(len(self._pending) - 1, -1, -1):
            request = self._running[row]
            sampling = request.sampling
            if request.tokens[-1] in sampling.stop or (
                sampling.stop_strings is not None and sampling.stop_strings.reached(request.tokens)
            ):
                request.finish_reason = "stop"
            elif (
                len(request.tokens) < request.sampling.params.max_new_tokens
                and len(request.prompt) + len(request.tokens) < context
            ):
                continue
            self._release(row)
            del self._requests[request.key]
            self._engine.stats["generated_tokens"] += len(request.tokens)
            output = GenerationOutput(
                request.tokens,
                request.logprobs,
                request.finish_reason,  # type: ignore[arg-type]
                request.choices,
            )
            finished.append((request.key, output))
        finished.reverse()  # in the order of the rows they ran in
        return finished

    def _release(self, row: int) -> None:
        """Ends the decoding request in ``row``, keeping the running rows contiguous, the
        decoding ones first and a prompt being read last."""
        cache, running, pending = self._engine.cache, self._running, self._pending
        last = len(pending) - 1
        if row != last:
            cache.swap(row, last)
            running[row], running[last] = running[last], running[row]
            pending[row], pending[last] = pending[last], pending[row]
        if len(running) > len(pending):  # the prompt being read moves down a row
            cache.swap(last, last + 1)
            running[last], running[last + 1] = running[last + 1], running[last]
        cache.release(len(running) - 1)  # the last running row: nothing moves
        running.pop()
        pending.pop()

    def _check_current(self) -> None:
        if self._engine._stream is not self:
            raise RuntimeError(
                "this stream was ended: its generator has opened another stream or run generate"
            )
