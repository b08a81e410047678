"""Without the ``[webshop]`` extra, its ids are listed unavailable, with the install command."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import rollenv
from environments.webshop import VARIANTS, register


def _registered_by_register(monkeypatch: pytest.MonkeyPatch) -> tuple[list, dict]:
    registered: list[str] = []
    unavailable: dict[str, str] = {}
    monkeypatch.setattr(rollenv, "register", lambda env_id, *a, **k: registered.append(env_id))
    monkeypatch.setattr(
        rollenv,
        "register_unavailable",
        lambda env_id, reason, **k: unavailable.__setitem__(env_id, reason),
    )
    register()
    return registered, unavailable


def test_without_bm25s_both_ids_are_unavailable_with_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)  # as if it were not installed

    registered, unavailable = _registered_by_register(monkeypatch)

    assert registered == []
    assert sorted(unavailable) == sorted(VARIANTS)
    for reason in unavailable.values():
        assert "bm25s" in reason and 'pip install "rollenv[webshop]"' in reason


def test_without_playwright_only_the_html_id_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "playwright", None)

    registered, unavailable = _registered_by_register(monkeypatch)

    assert registered == ["WebShop-v0"]
    assert list(unavailable) == ["WebShopHTML-v0"]
    assert "playwright" in unavailable["WebShopHTML-v0"]
    assert "bm25s" not in unavailable["WebShopHTML-v0"]


def test_making_it_without_the_extra_raises_one_error_naming_the_install():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["bm25s"] = None  # as if the [webshop] extra were not installed
        import rollenv

        assert "WebShop-v0" not in rollenv.registry
        try:
            rollenv.make("WebShop-v0")
        except rollenv.EnvUnavailableError as error:
            print(error)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "rollenv environment 'WebShop-v0' is not available here: needs bm25s (the [webshop] "
        'extra): pip install "rollenv[webshop]"'
    )
