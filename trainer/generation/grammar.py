"""Grammar-constrained decoding: the tokens a reply may take next, from a grammar.

A request's ``SamplingParams.grammar`` is a grammar in llguidance's Lark dialect: Lark rules,
with ``%json {...}`` embedding a JSON Schema (how a tool call's arguments are constrained; see
:meth:`trainer.tool_call_formats.ToolCallFormat.call_grammar`). :class:`GrammarMasks` compiles
it against the engine's tokenizer and keeps one matcher per request; before each sampled token
it gives the mask of the tokens the grammar allows (the engine samples among them), and after
it the matcher takes the token. Once the grammar is complete the mask holds only the stop
tokens, so the reply ends.

llguidance was chosen by measurement over xgrammar: ``benchmarks/tool_decoding.py`` times both
on the same tool grammar (compile and per-token mask) and prints the table.

Example:
    >>> from trainer.models import load_model
    >>> _, tokenizer = load_model("tiny-random", seed=0)
    >>> masks = GrammarMasks(tokenizer, vocab_size=len(tokenizer), stop_token_ids=(2,))
    >>> matcher = masks.matcher('start: "Up" | "Down"')
    >>> allowed = masks.allowed([matcher])[0]
    >>> texts = {tokenizer.decode([t]) for t in allowed.nonzero().flatten().tolist()}
    >>> all("Up".startswith(text) or "Down".startswith(text) for text in texts), "Down" in texts
    (True, True)
    >>> for token in tokenizer.encode("Up"):
    ...     masks.advance(matcher, token)
    >>> masks.allowed([matcher])[0].nonzero().flatten().tolist()  # only the stop token now
    [2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["GrammarMasks", "check_grammar_text"]

_INSTALL = 'pip install "rollenv[train]" (or pip install llguidance)'


def _llguidance() -> Any:
    try:
        import llguidance
        import llguidance.hf
        import llguidance.torch
    except ImportError as error:
        raise ImportError(f"grammar-constrained decoding needs llguidance: {_INSTALL}") from error
    return llguidance


def check_grammar_text(grammar: object) -> None:
    """Refuses a grammar that is not a non-empty string (before any compiling)."""
    if not isinstance(grammar, str) or not grammar.strip():
        raise ValueError(f"grammar must be a non-empty Lark grammar string, got {grammar!r}")


class GrammarMasks:
    """Compiles grammars for one tokenizer; gives each request's mask of allowed next tokens.

    Args:
        tokenizer: the engine's tokenizer (a fast Hugging Face tokenizer).
        vocab_size: the width of the model's logits (may exceed the tokenizer's vocabulary).
        stop_token_ids: the tokens that end a reply: allowed once the grammar is complete.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        vocab_size: int,
        stop_token_ids: Sequence[int],
    ) -> None:
        llg = _llguidance()
        if not stop_token_ids:
            raise ValueError("grammar-constrained decoding needs a stop token to end a reply")
        self.vocab_size = vocab_size
        self._stop = torch.tensor(list(stop_token_ids), dtype=torch.long)
        self._llg = llg
        self._tokenizer = llg.hf.from_tokenizer(
            tokenizer, n_vocab=vocab_size, eos_token=list(stop_token_ids)
        )
        self._compiled: dict[str, Any] = {}  # grammar text -> a fresh matcher to copy
        self._bitmask = llg.torch.allocate_token_bitmask(1, vocab_size)
        self._executor = llg.LLExecutor()  # fills a batch's masks on several threads

    def matcher(self, grammar: str) -> Any:
        """A new matcher at the start of ``grammar`` (compiled once per grammar text).

        Raises:
            ValueError: the grammar does not compile; the message is llguidance's.
        """
        check_grammar_text(grammar)
        prototype = self._compiled.get(grammar)
        if prototype is None:
            prototype = self._llg.LLMatcher(self._tokenizer, grammar, log_level=0)
            if prototype.is_error():
                raise ValueError(f"the grammar does not compile: {prototype.get_error()}")
            if len(self._compiled) >= 256:  # a server's many tool lists: keep the newest
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[grammar] = prototype
        return prototype.deep_copy()

    def allowed(self, matchers: Sequence[Any]) -> torch.Tensor:
        """The ``(len(matchers), vocab_size)`` boolean mask of the tokens each may take next.

        A complete grammar allows only the stop tokens; so does a matcher in error (a token its
        own mask did not allow) or a row left empty, so that reply ends rather than sampling
        from nothing.
        """
        count = len(matchers)
        if self._bitmask.shape[0] < count:
            self._bitmask = self._llg.torch.allocate_token_bitmask(count, self.vocab_size)
        bitmask = self._bitmask[:count]
        if count == 1:
            self._llg.torch.fill_next_token_bitmask(matchers[0], bitmask, 0)
        else:
            self._llg.torch.fill_next_token_bitmask_par(
                self._executor, [(matcher, row) for row, matcher in enumerate(matchers)], bitmask
            )
        # token t is bit t % 32 of word t // 32: the little-endian bytes' bits, low bit first
        bits = np.unpackbits(bitmask.numpy().view(np.uint8), axis=-1, bitorder="little")
        allowed = torch.from_numpy(bits[:, : self.vocab_size].view(np.bool_))
        empty = ~allowed.any(dim=-1)
        if bool(empty.any()):
            allowed[empty.nonzero().flatten()[:, None], self._stop] = True
        return allowed

    @staticmethod
    def advance(matcher: Any, token: int) -> None:
        """Gives the sampled ``token`` to ``matcher``. Once the grammar is complete its masks
        hold only the stop tokens: the reply ends as any other, at the stop token it samples."""
        matcher.consume_token(token)
