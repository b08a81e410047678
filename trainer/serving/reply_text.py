"""``ReplyText``: a reply's text as its tokens arrive, cut at the first stop string.

A streamed reply is sent a piece at a time. Decoding every prefix again would cost O(n^2) over
a long reply; this decodes only a short window of tokens each time (the last piece's tokens,
whose text is decoded once, and the new ones), as vLLM's detokenizer does, and holds back a
token whose bytes end mid-character (its text ends in U+FFFD) until the rest arrives. Text that
could be the start of a stop string is held back too, until it is clear it is not.

Example:
    >>> from trainer.models import load_tokenizer
    >>> tokenizer = load_tokenizer("tiny-random")
    >>> ids = tokenizer.encode("Move left. Then up.", add_special_tokens=False)
    >>> reply = ReplyText(tokenizer, stops=["Then"])
    >>> sent = "".join(reply.add(token, 0.0) for token in ids)
    >>> sent + reply.finish(), reply.stopped
    ('Move left. ', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

__all__ = ["ReplyText"]


class ReplyText:
    """The text of one reply, built token by token.

    Args:
        tokenizer: decodes the tokens (special tokens left out).
        stops: strings that end the reply before them.
        keep_stop: end the reply after the stop string instead, keeping it and the token that
            completed it (vLLM's ``include_stop_str_in_output``).

    Attributes:
        stopped: a stop string was found; the reply ends before it.
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, stops: list[str], keep_stop: bool = False
    ) -> None:
        self._tokenizer = tokenizer
        self._stops = [s for s in stops if s]
        self._keep_stop = keep_stop
        self._hold = max((len(s) for s in self._stops), default=1) - 1
        self.token_ids: list[int] = []
        self.logprobs: list[float] = []
        # len(text) once each token was added; None for a token whose bytes end mid-character
        self._text_after: list[int | None] = []
        self._text = ""
        self._prefix_start = 0  # tokens [prefix_start, read_end) decode to the last piece
        self._read_end = 0
        self._prefix_text = ""  # their text, decoded once
        self._sent = 0
        self.stopped = False

    @property
    def text(self) -> str:
        """The reply's text so far (up to a stop string, once found)."""
        return self._text

    def add(self, token_id: int, logprob: float) -> str:
        """Adds a sampled token; returns the text that is now safe to send (maybe "")."""
        if self.stopped:
            return ""
        self.token_ids.append(token_id)
        self.logprobs.append(logprob)
        decode = self._tokenizer.decode
        before = self._prefix_text
        now = decode(self.token_ids[self._prefix_start :], skip_special_tokens=True)
        if len(now) > len(before) and not now.endswith("\ufffd"):
            piece = now[len(before) :]
            self._prefix_start, self._read_end = self._read_end, len(self.token_ids)
            self._prefix_text = decode(
                self.token_ids[self._prefix_start : self._read_end], skip_special_tokens=True
            )
            searched_from = max(len(self._text) - self._hold, 0)
            self._text += piece
            self._text_after.append(len(self._text))
            found = self._first_stop(searched_from)
            if found is not None:
                start, stop = found
                self._text = self._text[: start + len(stop) if self._keep_stop else start]
                self.stopped = True
        else:  # its text comes with the next piece
            self._text_after.append(None)
        safe = len(self._text) if self.stopped else max(len(self._text) - self._hold, self._sent)
        return self._take(safe)

    def finish(self) -> str:
        """The text not yet sent, once the reply has ended. Tokens whose bytes never completed
        a character (the reply was cut mid-character) end it as a whole decode shows them,
        with U+FFFD, so that a reply's text is always the decode of its tokens."""
        if not self.stopped and self._read_end < len(self.token_ids):
            decode = self._tokenizer.decode
            whole = decode(self.token_ids[self._prefix_start :], skip_special_tokens=True)
            searched_from = max(len(self._text) - self._hold, 0)
            self._text += whole[len(self._prefix_text) :]
            self._text_after[-1] = len(self._text)
            self._read_end = len(self.token_ids)
            found = self._first_stop(searched_from)
            if found is not None:
                start, stop = found
                self._text = self._text[: start + len(stop) if self._keep_stop else start]
                self.stopped = True
        return self._take(len(self._text))

    def kept(self) -> tuple[list[int], list[float]]:
        """The tokens (and log-probabilities) whose text lies wholly before the stop string;
        all of them if none was found, or with ``keep_stop`` (no token is added after the one
        that completed the stop string)."""
        if not self.stopped or self._keep_stop:
            return self.token_ids, self.logprobs
        end, count = len(self._text), 0
        for i, after in enumerate(self._text_after):
            if after is None:  # no text of its own: it goes with the next token
                continue
            if after > end:
                break
            count = i + 1
        return self.token_ids[:count], self.logprobs[:count]

    def _first_stop(self, start: int) -> tuple[int, str] | None:
        """Where the first stop string from ``start`` on begins, and which one it is."""
        found = [(self._text.find(s, start), s) for s in self._stops]
        found = [(index, s) for index, s in found if index >= 0]
        return min(found) if found else None

    def _take(self, end: int) -> str:
        piece, self._sent = self._text[self._sent : end], max(self._sent, end)
        return piece
