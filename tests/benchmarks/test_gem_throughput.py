"""``benchmarks/gem_throughput.py``: its ceiling side is GEM in rollenv.make's wrappers, no more."""

from __future__ import annotations

import pytest

import rollenv
from environments.gem.runtime import gem_installed

pytestmark = pytest.mark.skipif(
    not gem_installed(),
    reason="GEM is not installed: pip install 'rollenv[gem]' && pip install --no-deps gem-llm",
)


@pytest.fixture
def script(load_script):
    return load_script("gem_throughput")


def _stack(env) -> list[str]:
    names = []
    while hasattr(env, "env"):
        names.append(type(env).__name__)
        env = env.env
    return [*names, type(env).__name__]


def test_the_ceiling_wraps_gem_as_rollenv_make_wraps_the_adapter(script):
    from environments.gem.runtime import import_gem

    ours = rollenv.make("gem/GuessTheNumberEasy-v0")
    ceiling = script.ceiling_env(import_gem().make("game:GuessTheNumber-v0-easy"), ours)
    assert _stack(ceiling)[:-1] == _stack(ours)[:-1]
    assert ceiling._max_episode_steps == ours.spec.max_episode_steps

    # GEM's own results pass through unchanged: the same seed and moves, the same episode
    direct = import_gem().make("game:GuessTheNumber-v0-easy")
    assert ceiling.reset(seed=5)[0] == direct.reset(seed=5)[0]
    for move in ("\\boxed{3}", "\\boxed{7}", "nonsense"):
        assert ceiling.step(move)[:4] == direct.step(move)[:4]


# the pass-through hands on GEM's raw text, which the adapter would escape (GEM's task envs end
# on a terminal state outside the text space): Gymnasium's checker says so once
@pytest.mark.filterwarnings("ignore:.*not within the observation space")
def test_a_short_measure_reports_all_three_sides(script):
    figures = script.measure("gem/Gcd-v0", seconds=0.3)
    for side in ("ours", "gem", "ceiling"):
        assert figures[side]["steps"] > 0 and figures[side]["steps_per_s"] > 0
    rates = {side: figures[side]["steps_per_s"] for side in ("ours", "gem", "ceiling")}
    assert figures["ratio"] == pytest.approx(rates["ours"] / rates["gem"])
    assert figures["ceiling_ratio"] == pytest.approx(rates["ceiling"] / rates["gem"])
    assert figures["ours_over_ceiling"] == pytest.approx(rates["ours"] / rates["ceiling"])
    # at 0.9x a step takes at most GEM's / 0.9: a ninth of GEM's step is the room left
    gem_us = 1e6 / rates["gem"]
    assert figures["allowed_us_per_step"] == pytest.approx(gem_us / 9)
    assert figures["wrappers_us_per_step"] == pytest.approx(1e6 / rates["ceiling"] - gem_us)
    assert figures["adapter_us_per_step"] == pytest.approx(1e6 / rates["ours"] - gem_us)
