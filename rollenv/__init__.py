"""rollenv: a Gymnasium-compatible hub of text environments for LLM agents.

Importing it registers with Gymnasium, as ``rollenv/<id>``, rollenv's own ids and those of every
installed ``rollenv.envs`` plugin, as Gymnasium's plugins do:
``gymnasium.make("rollenv/Sokoban-v0")`` and ``gymnasium.make("rollenv/MyGame-v0")`` work right
after ``import rollenv``.

Example:
    >>> import rollenv
    >>> env = rollenv.make("Sokoban-v0")
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step("<answer>Up</answer>")
    >>> sorted(info["metrics"])
    ['action_is_effective', 'action_is_valid', 'success']
"""

from rollenv.actions import AnswerFormat
from rollenv.mixture import MixtureEnv, make_mixture
from rollenv.multi_agent_registration import make_multi, multi_agent_ids, register_multi
from rollenv.registration import (
    EnvSpec,
    EnvUnavailableError,
    UnknownEnvError,
    make,
    pprint_registry,
    register,
    register_unavailable,
    registry,
    spec,
)
from rollenv.reward_checker import (
    GameableRewardError,
    RewardReport,
    RewardTolerance,
    check_reward,
)
from rollenv.text_env import TextEnv, text_space

__version__ = "0.1.0"

__all__ = [
    "AnswerFormat",
    "EnvSpec",
    "EnvUnavailableError",
    "GameableRewardError",
    "MixtureEnv",
    "TextEnv",
    "UnknownEnvError",
    "make",
    "make_mixture",
    "make_multi",
    "multi_agent_ids",
    "pprint_registry",
    "RewardReport",
    "RewardTolerance",
    "check_reward",
    "register",
    "register_unavailable",
    "register_multi",
    "registry",
    "spec",
    "text_space",
]

# rollenv's own ids and the installed plugins', registered with Gymnasium too, so that
# gymnasium.make("rollenv/<id>") finds them at once (reading the entry points takes milliseconds,
# and rollenv's own families register string entry points: no env module loads)
registry.load_plugins()


def __getattr__(name: str) -> object:
    # RemoteEnv brings httpx: loaded on first use, so `import rollenv` stays light
    if name == "RemoteEnv":
        from rollenv.remote import RemoteEnv

        return RemoteEnv
    raise AttributeError(f"module 'rollenv' has no attribute {name!r}")
