"""Search-QA: answer questions about a generated fictional world by BM25 search over its passages.

Ids (the difficulty knob: hops, corpus size, look-alike names):
    ``SearchQA-v0``: one hop, 600 passages with look-alike names.
    ``SearchQAMultiHop-v0``: two hops, 600 passages with look-alike names.
    ``SearchQAMultiHopLarge-v0``: two hops, 2300 passages with look-alike names.
"""

from __future__ import annotations

ENTRY_POINT = "environments.searchqa.env:SearchQAEnv"

VARIANTS: dict[str, tuple[str, dict]] = {
    "SearchQA-v0": ("1-hop questions, 600 passages, look-alike names", {"hops": 1}),
    "SearchQAMultiHop-v0": ("2-hop questions, 600 passages, look-alike names", {"hops": 2}),
    "SearchQAMultiHopLarge-v0": (
        "2-hop questions, 2300 passages, look-alike names",
        {"hops": 2, "corpus_size": "large"},
    ),
}


def register() -> None:
    """Registers every search-QA id with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv

    for env_id, (description, kwargs) in VARIANTS.items():
        # two actions more than the env's budget (2 * hops + 2): room for a malformed reply
        max_turns = 2 * kwargs["hops"] + 4
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
