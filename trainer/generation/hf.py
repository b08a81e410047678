"""``HFGenerator``: the in-process generation backend, a sampling loop over a transformers model.

It batches prompts (left-padded, with matching attention mask and position ids), runs the prompt
once and then one token per step through the model's key/value cache, and samples with its own
code rather than ``model.generate``, so that the log-probability it reports for each token is
exactly the one the trainer recomputes: ``log_softmax(logits / temperature)`` over the whole
vocabulary, before top-k, top-p or allowed-token truncation (see ``trainer.generation.base``).

Example:
    >>> from trainer.generation import HFGenerator, SamplingParams
    >>> from trainer.models import load_model
    >>> model, tokenizer = load_model("tiny-random", seed=0)
    >>> generator = HFGenerator(model, tokenizer)
    >>> prompt = tokenizer.apply_chat_template(
    ...     [{"role": "user", "content": "Which way?"}], add_generation_prompt=True, tokenize=True
    ... )["input_ids"]
    >>> params = SamplingParams(max_new_tokens=4, temperature=1.0, allowed_token_ids=(28, 29, 30),
    ...                         seed=0)
    >>> [out] = generator.generate([prompt], params)
    >>> len(out.token_ids), set(out.token_ids) <= {28, 29, 30}, out.finish_reason
    (4, True, 'length')
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from trainer.generation.base import GenerationOutput, SamplingParams
from trainer.generation.grammar import GrammarMasks, check_grammar_text
from trainer.generation.stop_strings import StopStrings, check_stop_strings

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["HFGenerator", "check_prompts", "prepare_request", "sample_next_tokens"]


def sample_next_tokens(
    logits: torch.Tensor,
    params: SamplingParams,
    generator: torch.Generator | None = None,
    allowed: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Picks one token per row of ``logits`` and returns it with its log-probability.

    The log-probability is taken under ``log_softmax(logits / temperature)`` over the whole
    vocabulary (``log_softmax(logits)`` when greedy), before any truncation: a trainer that
    recomputes the policy's log-probabilities over the full vocabulary gets the same number, so
    importance ratios stay consistent. With ``params.logprobs_among_allowed`` and ``allowed``,
    it is taken over the allowed tokens alone (still before top-k and top-p). The token is
    drawn from the truncated distribution: the allowed tokens only, then the ``top_k`` most
    likely of them, then the smallest set holding ``top_p`` of their renormalised mass.

    Args:
        logits: ``(batch, vocab)`` next-token logits.
        params: temperature (0 is greedy), ``top_k``, ``top_p``.
        generator: the random stream to sample from.
        allowed: optional boolean mask of the tokens that may be picked: ``(vocab,)`` for
            every row, or ``(batch, vocab)`` a row each (a grammar's masks).

    Returns:
        ``(tokens, logprobs)``, each of shape ``(batch,)``.

    Example:
        >>> logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]])
        >>> tokens, logprobs = sample_next_tokens(logits, SamplingParams(temperature=0))
        >>> tokens.tolist()
        [2, 0]
        >>> allowed = torch.tensor([True, True, False])
        >>> tokens, logprobs = sample_next_tokens(logits, SamplingParams(temperature=0),
        ...                                       allowed=allowed)
        >>> tokens.tolist(), torch.allclose(logprobs, logits.log_softmax(-1)[[0, 1], [1, 0]])
        ([1, 0], True)
        >>> among = SamplingParams(temperature=0, logprobs_among_allowed=True)
        >>> _, logprobs = sample_next_tokens(logits, among, allowed=allowed)
        >>> torch.allclose(logprobs, logits[:, :2].log_softmax(-1)[[0, 1], [1, 0]])
        True
    """
    logits = logits.float()
    greedy = params.temperature == 0
    scaled = logits if greedy else logits / params.temperature
    filtered = scaled if allowed is None else scaled.masked_fill(~allowed, float("-inf"))
    among_allowed = params.logprobs_among_allowed and allowed is not None
    logprobs_full = (filtered if among_allowed else scaled).log_softmax(dim=-1)
    if greedy:
        tokens = filtered.argmax(dim=-1)
    else:
        if 0 < params.top_k < filtered.shape[-1]:
            kth = filtered.topk(params.top_k, dim=-1).values[:, -1:]
            filtered = filtered.masked_fill(filtered < kth, float("-inf"))
        if params.top_p < 1.0:
            sorted_logits, order = filtered.sort(dim=-1, descending=True)
            sorted_probs = sorted_logits.softmax(dim=-1)
            mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
            drop = mass_before >= params.top_p  # the most likely token is always kept
            filtered = filtered.scatter(-1, order, sorted_logits.masked_fill(drop, float("-inf")))
        probs = logprobs_full.exp() if filtered is scaled else filtered.softmax(dim=-1)
        tokens = _draw(probs, generator)
    return tokens, logprobs_full.gather(-1, tokens[:, None]).squeeze(-1)


def _draw(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One draw per row from ``probs`` by inverting the cumulative distribution: one uniform
    number per row (``torch.multinomial`` takes about 30 times longer over a 49k vocabulary
    on a CPU). Tokens of probability 0 are never drawn."""
    cumulative = probs.cumsum(dim=-1)
    total = cumulative[:, -1:]
    u = torch.rand(total.shape, generator=generator, device=probs.device, dtype=probs.dtype)
    u = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    # right=True: the first index whose cumulative mass exceeds u, which has mass > 0.
    return torch.searchsorted(cumulative, u, right=True).squeeze(-1)


def _check_params(params: SamplingParams, vocab_size: int) -> None:
    if params.max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {params.max_new_tokens}")
    if params.temperature < 0:
        raise ValueError(f"temperature must be >= 0 (0 is greedy), got {params.temperature}")
    if not 0.0 < params.top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {params.top_p}")
    if params.top_k < 0:
        raise ValueError(f"top_k must be >= 0 (0 keeps every token), got {params.top_k}")
    ids = list(params.stop_token_ids) + list(params.allowed_token_ids or ())
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise ValueError(f"token ids {bad} are outside the vocabulary (size {vocab_size})")
    if params.allowed_token_ids is not None and not params.allowed_token_ids:
        raise ValueError("allowed_token_ids is empty: no token could be generated")
    if params.grammar is not None:
        check_grammar_text(params.grammar)
    check_stop_strings(params.stop)


def check_prompts(prompts: Sequence[Sequence[int]], vocab_size: int) -> None:
    """Refuses an empty prompt or a token id outside the vocabulary, naming the prompt."""
    for i, prompt in enumerate(prompts):
        if not prompt:
            raise ValueError(f"prompt {i} is empty: it needs at least one token")
        if min(prompt) < 0 or max(prompt) >= vocab_size:
            bad = [t for t in prompt if not 0 <= t < vocab_size]
            raise ValueError(
                f"prompt {i} has token ids {bad[:5]} outside the vocabulary (size {vocab_size})"
            )


def prepare_request(
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    vocab_size: int,
    device: torch.device,
) -> tuple[list[list[int]], torch.Generator, torch.Tensor | None]:
    """Checks one ``generate`` call and builds what sampling needs (every backend's start).

    Returns:
        ``(prompts, rng, allowed)``: the prompts as lists of ints, the random stream (seeded by
        ``params.seed``, fresh if ``None``) and the ``(vocab,)`` allowed-token mask or ``None``.

    Raises:
        ValueError: a bad sampling parameter, an empty prompt or an out-of-vocabulary id.
    """
    _check_params(params, vocab_size)
    prompts = [list(map(int, p)) for p in prompts]
    check_prompts(prompts, vocab_size)
    rng = torch.Generator(device=device)
    if params.seed is None:
        rng.seed()
    else:
        rng.manual_seed(params.seed)
    allowed = None
    if params.allowed_token_ids is not None:
        allowed = torch.zeros(vocab_size, dtype=torch.bool, device=device)
        allowed[list(params.allowed_token_ids)] = True
    return prompts, rng, allowed


class HFGenerator:
    """Generates with a transformers causal LM in this process (the default backend).

    The generator owns ``model``: it moves it to ``device``, puts it in eval mode and overwrites
    its weights in :meth:`update_weights`. Give it its own copy (``copy.deepcopy`` of the
    policy, or a second :func:`trainer.models.load_model`), not the module being trained.

    Args:
        model: a causal LM whose forward accepts ``attention_mask``, ``position_ids``,
            a key-value cache (``cache``, or ``past_key_values`` before transformers 5) and
            ``logits_to_keep`` (every Llama-like transformers model).
        tokenizer: its tokenizer; gives the pad id and the default stop token (eos).
        device: where to run.
        max_batch_size: most prompts run together; more are split into batches (of prompts of
            similar length, to waste little on padding).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        device: str | torch.device = "cpu",
        max_batch_size: int = 16,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        self.pad_token_id: int = pad if pad is not None else 0
        self.default_stop_token_ids: tuple[int, ...] = (eos,) if eos is not None else ()
        self._grammar_masks: dict[tuple[int, ...], GrammarMasks] = {}
        # transformers 5 names the key-value cache ``cache`` (in and out) and warns at every
        # use of the older ``past_key_values``
        forward = inspect.signature(model.forward).parameters
        self._cache_argument = "cache" if "cache" in forward else "past_key_values"

    def grammar_masks(self, stop_token_ids: tuple[int, ...]) -> GrammarMasks:
        """The grammar compiler for replies that end at ``stop_token_ids`` (made once per stop
        set: building llguidance's view of the vocabulary takes about 0.4 s)."""
        if stop_token_ids not in self._grammar_masks:
            self._grammar_masks[stop_token_ids] = GrammarMasks(
                self.tokenizer, self._vocab_size(), stop_token_ids
            )
        return self._grammar_masks[stop_token_ids]

    @torch.inference_mode()
    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """Samples one reply per prompt.

        A reply ends after a token in ``params.stop_token_ids`` (the tokenizer's eos token if
        that is empty), which is kept as its last token (``finish_reason="stop"``), after the
        token that completes a string of ``params.stop`` in its text (kept too), or after
        ``params.max_new_tokens`` tokens (``"length"``). With the same ``params.seed``, the
        same prompts give the same replies (a seed of ``None`` draws a fresh one).

        Args:
            prompts: token ids of each prompt (the chat template already applied).
            params: how to sample.

        Returns:
            One :class:`GenerationOutput` per prompt, in the order of ``prompts``.
        """
        prompts, rng, allowed = prepare_request(prompts, params, self._vocab_size(), self.device)
        if params.max_new_tokens == 0:
            return [GenerationOutput([], [], "length") for _ in prompts]
        stop_ids = params.stops(self.default_stop_token_ids)
        stop = torch.tensor(stop_ids, dtype=torch.long, device=self.device)
        stop_strings = StopStrings(self.tokenizer, params.stop) if params.stop else None

        # Longest first, so each batch holds prompts of similar length.
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        outputs: list[GenerationOutput | None] = [None] * len(prompts)
        for start in range(0, len(order), self.max_batch_size):
            batch = order[start : start + self.max_batch_size]
            results = self._generate_batch(
                [prompts[i] for i in batch], params, rng, allowed, stop, stop_strings
            )
            for i, result in zip(batch, results, strict=True):
                outputs[i] = result
        return outputs  # type: ignore[return-value]

    def _generate_batch(
        self,
        prompts: list[list[int]],
        params: SamplingParams,
        rng: torch.Generator,
        allowed: torch.Tensor | None,
        stop: torch.Tensor,
        stop_strings: StopStrings | None,
    ) -> list[GenerationOutput]:
        size, width = len(prompts), max(len(p) for p in prompts)
        input_ids = torch.full((size, width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((size, width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        input_ids = input_ids.to(self.device)
        attention_mask = attention_mask.to(self.device)
        # Each real token's position counts only real tokens before it; pads get position 0.
        position_ids = (attention_mask.cumsum(dim=-1) - 1).clamp(min=0)

        grammar = self.grammar_masks(tuple(stop.tolist())) if params.grammar is not None else None
        matchers = [grammar.matcher(params.grammar) for _ in prompts] if grammar else []
        tokens_out: list[list[int]] = [[] for _ in prompts]
        logprobs_out: list[list[float]] = [[] for _ in prompts]
        reasons: list[str] = ["length"] * size
        rows = list(range(size))  # batch row -> prompt index, for the rows still generating
        past: Any = None
        for step in range(params.max_new_tokens):
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                use_cache=True,
                logits_to_keep=1,
                **{self._cache_argument: past},
            )
            past = getattr(out, self._cache_argument)
            step_allowed = allowed
            if grammar is not None:
                step_allowed = grammar.allowed([matchers[row] for row in rows])
                if allowed is not None:
                    step_allowed &= allowed
            tokens, logprobs = sample_next_tokens(out.logits[:, -1, :], params, rng, step_allowed)
            for row, token, logprob in zip(rows, tokens.tolist(), logprobs.tolist(), strict=True):
                tokens_out[row].append(token)
                logprobs_out[row].append(logprob)
                if grammar is not None:
                    grammar.advance(matchers[row], token)
            stopped = torch.isin(tokens, stop)
            if stop_strings is not None:
                stopped |= torch.tensor(
                    [stop_strings.reached(tokens_out[row]) for row in rows], device=tokens.device
                )
            if bool(stopped.any()):
                for row, is_stop in zip(rows, stopped.tolist(), strict=True):
                    if is_stop:
                        reasons[row] = "stop"
            if step + 1 == params.max_new_tokens:
                break
            if bool(stopped.any()):
                keep = (~stopped).nonzero().squeeze(-1)
                if keep.numel() == 0:
                    break
                rows = [rows[i] for i in keep.tolist()]
                past.batch_select_indices(keep)  # finished rows leave the batch and the cache
                tokens = tokens[keep]
                attention_mask = attention_mask[keep]
                position_ids = position_ids[keep]
            input_ids = tokens[:, None]
            attention_mask = torch.cat(
                [attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1
            )
            position_ids = position_ids[:, -1:] + 1
        return [
            GenerationOutput(tokens_out[row], logprobs_out[row], reasons[row])  # type: ignore[arg-type]
            for row in range(size)
        ]

    def _vocab_size(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> None:
        """Copies new policy weights into the generator's model.

        For models with tied input and output embeddings, the output copy may be left out of
        ``state_dict`` (as safetensors files do).

        Args:
            state_dict: full, un-sharded weights, e.g. ``policy.state_dict()``.
            strict: every weight of the model must be given; ``False`` loads a part (one bucket
                of a bucketed push), though a name the model lacks is still an error.
        """
        weights = dict(state_dict)
        tied = getattr(self.model, "_tied_weights_keys", None)
        if isinstance(tied, Mapping) and getattr(self.model.config, "tie_word_embeddings", False):
            for target, source in tied.items():
                if target not in weights and source in weights:
                    weights[target] = weights[source]
        with torch.no_grad():
            result = self.model.load_state_dict(weights, strict=strict)
        if result.unexpected_keys:
            raise KeyError(f"weights the model does not have: {result.unexpected_keys[:5]}")
