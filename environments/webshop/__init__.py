"""WebShop (Yao et al., 2022): shop for what an instruction asks, offline, many envs a process.

Ids:
    ``WebShop-v0``: text pages, in process, no server (5,000 generated products).
    ``WebShopHTML-v0``: the same pages served by a real web server on 127.0.0.1 and read by
    a headless Chromium through Playwright (needs ``pip install "rollenv[webshop]"`` and
    Debian's ``chromium``).

Both take ``difficulty`` (``"paper"``, the default: look-alike products, noisy titles and
paraphrased instructions, as hard as WebShop for its rule baseline; ``"easy"``: the clean
1,000-product catalog with instructions in its own words), ``num_products``, ``catalog_seed`` or
``data_path`` (a folder with WebShop's own files) as keyword arguments of ``rollenv.make``.
Importing this package imports no optional dependency.
"""

from __future__ import annotations

MAX_TURNS = 15

VARIANTS: dict[str, tuple[str, str]] = {
    "WebShop-v0": (
        "environments.webshop.env:WebShopEnv",
        "WebShop in text, in process (5,000 generated products, paper difficulty)",
    ),
    "WebShopHTML-v0": (
        "environments.webshop.browser_env:WebShopHTMLEnv",
        "WebShop served over HTTP and read by headless Chromium (Playwright)",
    ),
}

#: the ``[webshop]`` extra's packages each id needs (import names): search and reward matching,
#: then the HTML mode's server, templates and browser driver
NEEDS: dict[str, tuple[str, ...]] = {
    "WebShop-v0": ("bm25s", "rapidfuzz"),
    "WebShopHTML-v0": ("bm25s", "rapidfuzz", "fastapi", "uvicorn", "jinja2", "playwright"),
}


def missing_packages(env_id: str) -> list[str]:
    """The packages of the ``[webshop]`` extra that ``env_id`` needs and this Python lacks.

    Example:
        >>> set(missing_packages("WebShopHTML-v0")) <= set(NEEDS["WebShopHTML-v0"])
        True
    """
    import importlib.util

    missing = []
    for module in NEEDS[env_id]:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install, or a module without a spec
            found = False
        if not found:
            missing.append(module)
    return missing


def register() -> None:
    """Registers the WebShop ids with rollenv (the ``rollenv.envs`` entry point).

    An id whose packages are missing is registered unavailable, with the install command.
    """
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv
    from environments.webshop.deps import INSTALL_HINT

    for env_id, (entry_point, description) in VARIANTS.items():
        missing = missing_packages(env_id)
        if missing:
            reason = f"needs {', '.join(missing)} (the [webshop] extra): {INSTALL_HINT}"
            rollenv.register_unavailable(env_id, reason, description=description)
            continue
        rollenv.register(env_id, entry_point, max_episode_steps=MAX_TURNS, description=description)
