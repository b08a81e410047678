"""Text-to-SQL: answer a question about a generated SQLite database with a query.

Ids:
    ``TextToSQL-v0``: one table (filters, counts, aggregates, order by and limit), one query.
    ``TextToSQLHard-v0``: joins, group by and having, one query.
    ``TextToSQLInteractive-v0``: either kind; up to 5 exploratory ``sql[...]`` queries whose
    rows the agent sees, then ``answer[...]``.
"""

from __future__ import annotations

SINGLE_TURN = "environments.text_to_sql.env:TextToSQLEnv"
INTERACTIVE = "environments.text_to_sql.env:InteractiveTextToSQLEnv"

VARIANTS: dict[str, tuple[str, str, int, dict]] = {
    "TextToSQL-v0": (
        "SQL over one table of a generated SQLite database, one query",
        SINGLE_TURN,
        1,
        {"difficulty": "easy"},
    ),
    "TextToSQLHard-v0": (
        "SQL with joins and group by over a generated SQLite database, one query",
        SINGLE_TURN,
        1,
        {"difficulty": "hard"},
    ),
    "TextToSQLInteractive-v0": (
        "SQL over a generated SQLite database: explore with queries, then answer",
        INTERACTIVE,
        6,
        {"difficulty": "mixed", "max_actions": 6},
    ),
}


def register() -> None:
    """Registers the text-to-SQL ids with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: rollenv imports the entry points while it is itself being imported
    import rollenv

    for env_id, (description, entry_point, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, entry_point, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
