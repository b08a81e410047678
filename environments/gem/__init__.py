"""GEM (``gem-llm``): its games and reasoning-gym tasks as rollenv envs, ``gem/<Name>-v0``.

``register()`` reads the checked-in manifest (``environments.gem.catalog``) and never imports
GEM. Every GEM id is registered: the runnable ones with ``rollenv.register``, the others with
``rollenv.register_unavailable`` and the reason (a Hugging Face dataset, an nltk corpus, a bug in
GEM itself); without GEM installed, every id is unavailable with the command that installs it.
See ``environments.gem.env`` for the adapter's contract and reward mapping.

Example:
    >>> import rollenv
    >>> rollenv.spec("gem/SudokuEasy-v0").kwargs
    {'gem_id': 'game:Sudoku-v0-easy'}
"""

from __future__ import annotations

from environments.gem.catalog import CATALOG, NEEDS_NLTK_WORDS, GemEntry

# gem-llm 0.1.0 pins reasoning-gym==0.1.23 and nltk==3.9.1: installed with its dependencies it
# would downgrade them for every family; [gem] brings what it needs, gem-llm comes without pins
INSTALL_HINT = "pip install 'rollenv[gem]' && pip install --no-deps gem-llm==0.1.0"
GAME_ENTRY_POINT = "environments.gem.env:GemEnv"
TASK_ENTRY_POINT = "environments.gem.env:GemReasoningEnv"


def registrations(*, gem_installed: bool, has_nltk_words: bool) -> list[tuple[GemEntry, str]]:
    """Every catalog entry with the reason it is unavailable here (empty: it is registered).

    Example:
        >>> plan = dict((e.gem_id, reason) for e, reason in
        ...             registrations(gem_installed=True, has_nltk_words=False))
        >>> plan["rg:gcd"], plan["game:Wordle-v0-easy"][:25]
        ('', "needs nltk's 'words' corp")
    """
    plan = []
    for entry in CATALOG:
        reason = entry.unavailable
        if reason == NEEDS_NLTK_WORDS and has_nltk_words:
            reason = ""
        plan.append((entry, reason if gem_installed else INSTALL_HINT))
    return plan


def register() -> None:
    """Registers every GEM id with rollenv (the ``rollenv.envs`` entry point ``gem``)."""
    # imported here, not at the top: so that importing this package (``import
    # environments.gem.env`` before rollenv) never imports rollenv while it is half-imported
    import rollenv
    from environments.gem.runtime import gem_installed
    from rollenv.nltk_data import nltk_resource_installed

    installed = gem_installed()
    has_words = installed and nltk_resource_installed("corpora/words")
    plan = registrations(gem_installed=installed, has_nltk_words=has_words)
    for entry, reason in plan:
        if reason:
            rollenv.register_unavailable(entry.env_id, reason, description=entry.description)
            continue
        rollenv.register(
            entry.env_id,
            TASK_ENTRY_POINT if entry.has_gold_answer else GAME_ENTRY_POINT,
            max_episode_steps=entry.max_turns,
            kwargs={"gem_id": entry.gem_id},
            description=entry.description,
        )
