"""Judged answers: free-form questions scored by a rule verifier, then by an LLM judge.

Ids:
    ``JudgedAnswer-v0``: short text answers to reasoning-gym questions (family relationships,
    cube colours, weekdays, words spelled backward); without reward workers the rule alone
    scores, with them (``defer_reward=True``) a judge scores what the rule rejects.
"""

from __future__ import annotations

ENTRY_POINT = "environments.judged_answer.env:JudgedAnswerEnv"


def register() -> None:
    """Registers ``JudgedAnswer-v0`` with rollenv (the ``rollenv.envs`` entry point)."""
    import rollenv

    rollenv.register(
        "JudgedAnswer-v0",
        ENTRY_POINT,
        max_episode_steps=1,
        description="short text answers to generated questions, rule first, then a judge",
    )
