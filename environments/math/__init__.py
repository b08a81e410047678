"""Math: problems with a final answer checked for equivalence by math-verify.

Ids:
    ``MathVerify-v0``: one answer per reasoning-gym problem (arithmetic, GSM-symbolic, ...).
    ``MathTool-v0``: the same, and up to 4 runs of Python in a sandboxed session first.

Needs ``pip install "rollenv[math]"``; ``rollenv.make("MathVerify-v0", tasks=["gcd"])`` picks
reasoning-gym tasks by name, ``dataset="gsm8k.jsonl"`` reads a file instead.
"""

from __future__ import annotations

ENTRY_POINT = "environments.math.env:MathEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "MathVerify-v0": ("generated math problems, one answer", 1, {}),
    "MathTool-v0": (
        "generated math problems, Python in a sandbox before answering",
        5,
        {"max_tool_calls": 4},
    ),
}


def register() -> None:
    """Registers the math ids with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
