"""Where each page lives: one layout shared by the served app and the static export.

Every page is addressed by a path relative to the site's root (``index.html``,
``models/oracle.html``, ``envs/SimpleSokoban-v0.html``, ``runs/<run>.html``,
``episodes/12.html``, ``ratings/<game>.html``, ``matches/3.html``); a page links to another
through ``root_of(page) + path``, so the same links work from ``file://`` and from any URL
prefix the server sits under.

Example:
    >>> model_path("oracle"), env_path("SimpleSokoban-v0"), episode_path(12)
    ('models/oracle.html', 'envs/SimpleSokoban-v0.html', 'episodes/12.html')
    >>> model_path("openai:http://127.0.0.1:8000/v1#qwen")
    'models/openai-http-127.0.0.1-8000-v1-qwen-8a85127f.html'
    >>> root_of("index.html"), root_of("models/oracle.html")
    ('', '../')
"""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "INDEX",
    "env_path",
    "episode_path",
    "match_path",
    "model_path",
    "ratings_path",
    "root_of",
    "run_path",
    "slug",
]

INDEX = "index.html"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_LONGEST = 80


def slug(name: str) -> str:
    """A file-name-safe form of ``name``: itself when already safe, else a cleaned form with a
    short hash of the original, so distinct names never share a page.

    Example:
        >>> slug("SimpleSokoban-v0"), slug("run 1@step-20")
        ('SimpleSokoban-v0', 'run-1-step-20-0015aad0')
    """
    cleaned = _UNSAFE.sub("-", name).strip("-.")[:_LONGEST]
    if cleaned == name and cleaned:
        return cleaned
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{cleaned}-{digest}" if cleaned else digest


def model_path(model: str) -> str:
    """The page of a model (every evaluation whose identity names it)."""
    return f"models/{slug(model)}.html"


def env_path(env_id: str) -> str:
    """The page of an env (every model's result in it)."""
    return f"envs/{slug(env_id)}.html"


def run_path(run_id: str) -> str:
    """The page of a ``roll-agent train`` run (its learning curves)."""
    return f"runs/{slug(run_id)}.html"


def episode_path(episode_id: int) -> str:
    """The episode viewer of one stored episode."""
    return f"episodes/{int(episode_id)}.html"


def root_of(page: str) -> str:
    """The relative prefix from ``page`` back to the site's root."""
    return "../" * page.count("/")


def ratings_path(game: str) -> str:
    """The ratings of the players of a game of several seats, and their matches."""
    return f"ratings/{slug(game)}.html"


def match_path(match_id: int) -> str:
    """The viewer of one stored match: every seat's moves."""
    return f"matches/{int(match_id)}.html"
