"""Wordle: guess a secret English word from green/yellow/grey feedback, words from english-words.

Ids:
    ``Wordle-v0``: 5 letters, secrets from the common pool (words both dictionaries list).
    ``WordleHard-v0``: 5 letters, secrets from the whole dictionary (rare words too).

``WordleEnv(word_length=4)`` plays 4-letter words (6 also works), but no id registers it: the
oracle wins only 198 of 200 seeded 4-letter games (so many words differ in one letter, like the
twelve ``_est`` words, that six guesses do not always tell them apart), and every registered id
with an oracle must be solved on all 200.
"""

from __future__ import annotations

ENTRY_POINT = "environments.wordle.env:WordleEnv"
#: six guesses; invalid replies cost a turn of the time limit but no guess
MAX_TURNS = 12

VARIANTS: dict[str, tuple[str, dict]] = {
    "Wordle-v0": ("5-letter words, common secrets, 6 guesses", {"word_length": 5}),
    "WordleHard-v0": (
        "5-letter words, secrets from the whole dictionary, 6 guesses",
        {"word_length": 5, "secret_pool": "all"},
    ),
}


def register() -> None:
    """Registers every Wordle id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import importlib.util

    import rollenv

    missing = importlib.util.find_spec("english_words") is None
    for env_id, (description, kwargs) in VARIANTS.items():
        if missing:
            reason = "needs the english-words word lists: pip install 'rollenv[wordle]'"
            rollenv.register_unavailable(env_id, reason, description=description)
            continue
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=MAX_TURNS, kwargs=kwargs, description=description
        )
