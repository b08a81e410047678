"""Stop strings: a reply ends once its text contains one of them (vLLM's ``stop``).

A stop token ends a reply on one id; a stop string such as ``"</answer>"`` spans several tokens
and may start or end inside one. The in-process backends decode the tail of each reply after
every sampled token and end it on the token that completes a stop string. That token is kept,
as vLLM keeps it with ``include_stop_str_in_output``, so the reply's tokens are exactly the
ones sampled; :func:`cut_after_stop` drops whatever text that last token carried past the stop
string.

Example:
    >>> from trainer.models import load_tokenizer
    >>> tokenizer = load_tokenizer("tiny-random")
    >>> stops = StopStrings(tokenizer, ("</answer>",))
    >>> ids = tokenizer.encode("<answer>3 - 1</answer> and more", add_special_tokens=False)
    >>> ended = next(n for n in range(1, len(ids) + 1) if stops.reached(ids[:n]))
    >>> tokenizer.decode(ids[:ended])
    '<answer>3 - 1</answer>'
    >>> cut_after_stop("<answer>3 - 1</answer>\\nDone", ("</answer>",))
    '<answer>3 - 1</answer>'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class StopStrings:
    """Tells whether a reply's text, as its tokens decode, holds a stop string.

    Args:
        tokenizer: the policy's tokenizer.
        strings: the stop strings (non-empty).

    The text is the reply's as the env and a server's client read it: decoded without special
    tokens. Only its end is decoded: a reply is checked after each token, so an earlier
    occurrence would already have ended it, and the last tokens whose text is as long as the
    longest stop string (a token that decodes to nothing, a special one, adds none) suffice.
    """

    def __init__(self, tokenizer: Any, strings: Sequence[str]) -> None:
        check_stop_strings(strings)
        self.strings = tuple(strings)
        self._tokenizer = tokenizer
        self._longest = max(len(s) for s in self.strings)

    def reached(self, tokens: Sequence[int]) -> bool:
        """Whether the text of ``tokens`` (a reply so far) holds one of the stop strings."""
        window = self._longest + 1
        while True:
            tail = self._tokenizer.decode(list(tokens[-window:]), skip_special_tokens=True)
            if len(tail) > self._longest or window >= len(tokens):
                return any(s in tail for s in self.strings)
            window *= 2


def check_stop_strings(strings: Sequence[str]) -> None:
    """Raises ``ValueError`` unless ``strings`` is a sequence of non-empty strings."""
    if isinstance(strings, str) or not all(isinstance(s, str) and s for s in strings):
        raise ValueError(f"stop must be a list of non-empty strings, got {strings!r}")


def cut_after_stop(text: str, strings: Sequence[str]) -> str:
    """``text`` up to and including the first stop string in it (all of it if none is)."""
    ends = [text.index(s) + len(s) for s in strings if s in text]
    return text[: min(ends)] if ends else text
