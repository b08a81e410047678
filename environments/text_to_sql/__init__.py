"""Placeholder: the text_to_sql family is being written this session (issue 21)."""


def register() -> None:
    """Registers nothing yet."""
