"""The word lists of the Wordle-like game, read from the ``english-words`` package (no download).

``english-words`` ships two dictionaries: ``web2`` (Webster's Second International, 1934, with
many rare and archaic words) and ``gcide`` (the GNU Collaborative International Dictionary of
English). The package has no word frequencies, so "common" here means *listed by both
dictionaries*: a word two independent dictionaries agree on is far more likely to be in
everyday use than one only ``web2`` keeps (``abaff``, ``abama``).

* ``dictionary(n)``: every allowed guess: lowercase ASCII words of ``n`` letters in either
  dictionary (``web2``'s proper nouns left out).
* ``secret_pool(n, "common")``: words in both; ``secret_pool(n, "all")``: the whole dictionary.

Example:
    >>> "crane" in dictionary(5) and "crane" in secret_pool(5, "common")
    True
    >>> set(secret_pool(4, "common")) <= set(dictionary(4))
    True
"""

from __future__ import annotations

import functools

from english_words import get_english_words_set

#: the secret pools a game can draw from
SECRET_POOLS = ("common", "all")
#: word lengths the dictionaries have enough words for
WORD_LENGTHS = (4, 5, 6)


def _words_of_length(words: set[str], length: int) -> frozenset[str]:
    return frozenset(w for w in words if len(w) == length and w.isascii() and w.isalpha())


@functools.cache
def _sources() -> tuple[frozenset[str], frozenset[str]]:
    # web2 unlowered keeps proper nouns capitalised, so .islower() drops them; gcide capitalises
    # its headwords, so it is read lowercased
    web2 = {w for w in get_english_words_set(["web2"], lower=False, alpha=True) if w.islower()}
    gcide = set(get_english_words_set(["gcide"], lower=True, alpha=True))
    return frozenset(web2), frozenset(gcide)


@functools.cache
def dictionary(length: int) -> tuple[str, ...]:
    """Every allowed guess of ``length`` letters, sorted."""
    _check_length(length)
    web2, gcide = _sources()
    return tuple(sorted(_words_of_length(web2 | gcide, length)))


@functools.cache
def secret_pool(length: int, pool: str) -> tuple[str, ...]:
    """The secrets a game of ``length`` letters draws from, sorted.

    Args:
        length: letters per word (one of ``WORD_LENGTHS``).
        pool: ``"common"`` (in both dictionaries) or ``"all"`` (every allowed guess).
    """
    _check_length(length)
    if pool not in SECRET_POOLS:
        raise ValueError(f"secret_pool must be one of {SECRET_POOLS}, got {pool!r}")
    if pool == "all":
        return dictionary(length)
    web2, gcide = _sources()
    return tuple(sorted(_words_of_length(web2, length) & _words_of_length(gcide, length)))


def _check_length(length: int) -> None:
    if length not in WORD_LENGTHS:
        raise ValueError(f"word_length must be one of {WORD_LENGTHS}, got {length!r}")
