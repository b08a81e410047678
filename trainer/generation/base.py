"""The ``Generator`` interface: prompts as token ids in, sampled token ids and log-probs out.

Token in, token out: a trajectory keeps exactly the ids a generator sampled, and the model's
output is never re-tokenised. ``logprobs[i]`` is the log-probability of ``token_ids[i]`` under
the policy's sampling distribution, ``log_softmax(logits / temperature)``, before any top-k,
top-p or allowed-token truncation: the same quantity the trainer recomputes for PPO ratios.
With ``logprobs_among_allowed`` it is taken under the softmax over the allowed tokens alone
(what vLLM reports), the quantity a trainer that scores replies among the action words
(``algorithm.score_actions_only``) recomputes. A ``grammar`` allows a set of tokens that
changes at every step; the same two rules apply to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # env manager actors import this module and never need torch
    import torch


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one reply.

    Attributes:
        max_new_tokens: most tokens to generate per prompt.
        temperature: softmax temperature; 0 means greedy.
        top_p: nucleus sampling mass (1.0 keeps every token).
        top_k: keep only the k most likely tokens (0 keeps every token).
        stop_token_ids: generation of a prompt stops after sampling one of these (kept in the
            output, as the end of the assistant turn).
        allowed_token_ids: if set, sample only among these ids (constrained decoding).
        seed: seeds the sampling of this call.
        ignore_eos: stop only at ``stop_token_ids``, never at the backend's default stop
            token (its eos) when they are empty (vLLM's parameter of that name).
        logprobs_among_allowed: with ``allowed_token_ids``, report each token's
            log-probability under the softmax over the allowed tokens alone, as vLLM does,
            instead of over the whole vocabulary (the ``continuous`` and ``hf`` backends).
        stop: stop strings: generation of a prompt stops once its reply's text holds one of
            them (``finish_reason="stop"``); the token that completed it is the reply's last
            (vLLM's ``stop`` with ``include_stop_str_in_output``; see
            :mod:`trainer.generation.stop_strings`).
        grammar: if set, the reply must follow this grammar (llguidance's Lark dialect, with
            ``%json`` for JSON Schemas; see :mod:`trainer.generation.grammar`): each token is
            sampled among those it allows next, and once it is complete only a stop token.
            Log-probabilities follow the same rule as ``allowed_token_ids``: over the whole
            vocabulary, or among the allowed tokens with ``logprobs_among_allowed``. How tool
            calls are constrained (``continuous`` and ``hf``; vLLM takes it as a Lark grammar).
        record_choices: with ``grammar`` or ``allowed_token_ids`` (the ``continuous``
            backend): for each token sampled among at most this many allowed tokens, the
            output records those tokens (:attr:`GenerationOutput.choices`) and the token's
            log-probability is taken under the softmax over them alone: what a trainer that
            scores each token among its recorded choices recomputes. A token sampled among
            more records ``None`` and keeps the rules above. 0 records nothing.
    """

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop_token_ids: tuple[int, ...] = ()
    allowed_token_ids: tuple[int, ...] | None = None
    seed: int | None = None
    ignore_eos: bool = False
    logprobs_among_allowed: bool = False
    stop: tuple[str, ...] = ()
    grammar: str | None = None
    record_choices: int = 0

    def for_turn(self, turn: int) -> SamplingParams:
        """These parameters for turn ``turn`` of an episode: a fresh random stream per turn
        (re-using one seed would replay the same draws); unchanged without a seed."""
        if self.seed is None:
            return self
        return replace(self, seed=self.seed + 1_000_003 * turn)

    def stops(self, default: tuple[int, ...]) -> tuple[int, ...]:
        """The tokens that end a reply: ``stop_token_ids``, else the backend's ``default``
        (unless ``ignore_eos``)."""
        if self.stop_token_ids or self.ignore_eos:
            return self.stop_token_ids
        return default


@dataclass
class GenerationOutput:
    """One prompt's reply. ``finish_reason``: a stop token (``"stop"``), ``max_new_tokens`` or
    the context reached (``"length"``), or the request was aborted (``"abort"``).
    ``choices``: with ``SamplingParams.record_choices``, the tokens each token was sampled
    among (``None`` where it had more to choose from, or nothing restricted it).
    ``weight_versions``: the version of the weights that sampled each token, where the
    generator numbers its weights (a ``GeneratorActor``); ``None`` where it does not."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: Literal["stop", "length", "abort"]
    choices: list[tuple[int, ...] | None] | None = None
    weight_versions: list[int] | None = None


class Generator(Protocol):
    """What every generation backend offers (in-process HF, vLLM, SGLang, OpenAI-compatible)."""

    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[GenerationOutput]:
        """Samples one reply per prompt; outputs are in the order of ``prompts``."""
        ...

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], strict: bool = True) -> None:
        """Loads new policy weights (un-sharded, merged if LoRA was trained); all of them, or
        with ``strict=False`` a part (a bucket of a bucketed push)."""
        ...


@runtime_checkable
class StreamingGenerator(Protocol):
    """A generator that also takes requests one at a time into its running batch (continuous
    batching): what an env manager's ``continuous`` schedule and a suite's evaluation need.
    ``isinstance(generator, StreamingGenerator)`` tells whether a generator has it."""

    def stream(self, params: SamplingParams, *, max_step_tokens: int | None = None) -> Any:
        """Opens a stream (a ``trainer.generation.continuous.GenerationStream``): requests
        submitted at any step join the batch as others leave it."""
        ...
