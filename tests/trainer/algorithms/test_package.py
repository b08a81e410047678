"""``trainer.algorithms`` exports its API, documented and typed."""

from __future__ import annotations

import inspect

import trainer.algorithms as algorithms


def test_all_names_resolve_and_functions_are_documented():
    assert len(set(algorithms.__all__)) == len(algorithms.__all__)
    for name in algorithms.__all__:
        obj = getattr(algorithms, name)
        if inspect.isfunction(obj):
            doc = inspect.getdoc(obj) or ""
            assert "Args:" in doc and "Returns:" in doc, name
            assert "return" in obj.__annotations__, name


def test_the_brief_api_is_exported():
    expected = {
        "grpo_advantages",
        "gigpo_advantages",
        "gae_advantages",
        "reinforce_pp_advantages",
        "rloo_advantages",
        "starpo_s_filter",
        "ppo_policy_loss",
        "aggregate_loss",
        "kl_penalty",
        "entropy_from_logits",
        "value_loss",
    }
    assert expected <= set(algorithms.__all__)
