"""The difficulties of the generated WebShop: ``"paper"`` (the default) and ``"easy"``.

* ``"paper"`` is as hard as WebShop (Yao et al., 2022) for its rule baseline: 5,000 look-alike
  products under noisy titles (``environments.webshop.paper_catalog``) and paraphrased
  instructions with distractors (``environments.webshop.paper_instructions``). A naive shopper
  (search the instruction, open the first hit, click the options whose names the instruction
  contains, buy) scores a mean reward near WebShop's rule baseline (45.6 of 100);
  ``benchmarks/webshop_naive_shopper.py`` measures it.
* ``"easy"``: 1,000 products with clean titles and instructions that repeat the catalog's
  phrases; the naive shopper scores above 0.9 there.

Example:
    >>> check_difficulty("easy"), default_num_products("paper")
    ('easy', 5000)
    >>> check_difficulty("hard")
    Traceback (most recent call last):
    ...
    ValueError: difficulty must be one of 'paper', 'easy'; got 'hard'
"""

from __future__ import annotations

DIFFICULTIES = ("paper", "easy")
DEFAULT_DIFFICULTY = "paper"
_NUM_PRODUCTS = {"paper": 5000, "easy": 1000}


def check_difficulty(difficulty: str) -> str:
    """Returns ``difficulty`` if it is one of ``DIFFICULTIES``, else raises ``ValueError``."""
    if difficulty not in DIFFICULTIES:
        allowed = ", ".join(repr(d) for d in DIFFICULTIES)
        raise ValueError(f"difficulty must be one of {allowed}; got {difficulty!r}")
    return difficulty


def default_num_products(difficulty: str) -> int:
    """The catalog size a difficulty generates when ``num_products`` is not given."""
    return _NUM_PRODUCTS[check_difficulty(difficulty)]
