"""Placeholder: the minesweeper family is being written this session (issue 21)."""


def register() -> None:
    """Registers nothing yet."""
