"""Answer checking for search-QA: normalised exact match, nothing partial.

Both sides are normalised the way SQuAD and HotpotQA normalise (Unicode NFKC, lowercase,
punctuation and the articles a/an/the dropped, whitespace collapsed), then compared for
equality. There is no partial credit: an answer that contains the right one among other words
(the passage copied back, a list of guesses) is wrong.

Example:
    >>> is_correct("  The DOLOBURG. ", "Doloburg")
    True
    >>> is_correct("Doloburg or Celaburg", "Doloburg")
    False
"""

from __future__ import annotations

import re
import string
import unicodedata

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """Lowercase, no punctuation or articles, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def is_correct(answer: str, gold: str) -> bool:
    """Whether ``answer`` is ``gold`` once both are normalised (and not empty)."""
    normalised = normalise(answer)
    return bool(normalised) and normalised == normalise(gold)
