"""Skips the browser tests, with the reason, where Chromium or Playwright is missing."""

from __future__ import annotations

import importlib.util
import os

import pytest

from environments.webshop.browser import CHROMIUM_PATH

if not os.path.exists(CHROMIUM_PATH):
    BROWSER_MISSING = f"Chromium not found at {CHROMIUM_PATH} (apt-get install -y chromium)"
elif importlib.util.find_spec("playwright") is None:
    BROWSER_MISSING = 'playwright is not installed (pip install "rollenv[webshop]")'
else:
    BROWSER_MISSING = ""

needs_browser = pytest.mark.skipif(bool(BROWSER_MISSING), reason=BROWSER_MISSING or "ok")
