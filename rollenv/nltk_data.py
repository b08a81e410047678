"""Whether NLTK data (a corpus, a tagger) is on disk, without importing nltk.

Adapted games (TextArena's, GEM's) that need NLTK data are listed unavailable where it is
missing, never registered broken. Importing nltk takes about a second, and registration runs
at ``import rollenv``: the check looks in the folders of ``nltk.data.path``'s defaults instead.

Example:
    >>> nltk_resource_installed("corpora/no-such-corpus")
    False
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def nltk_data_dirs() -> list[Path]:
    """The folders nltk searches for its data on this platform (``nltk.data.path``'s defaults)."""
    dirs = [Path(p) for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    dirs.append(Path.home() / "nltk_data")
    for prefix in dict.fromkeys((sys.prefix, sys.exec_prefix, sys.base_prefix)):
        dirs += [Path(prefix) / "nltk_data", Path(prefix) / "share" / "nltk_data"]
        dirs.append(Path(prefix) / "lib" / "nltk_data")
    for base in ("/usr/share", "/usr/local/share", "/usr/lib", "/usr/local/lib"):
        dirs.append(Path(base) / "nltk_data")
    return dirs


def nltk_resource_installed(path: str) -> bool:
    """Whether the NLTK resource at ``path`` in nltk_data (e.g. ``"corpora/words"``) is there,
    as a folder or as its ``.zip``."""
    return any(
        (folder / path).exists() or (folder / f"{path}.zip").exists() for folder in nltk_data_dirs()
    )
