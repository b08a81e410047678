"""The curriculum: its rule on its own, the config's checks, and a pipeline that raises a
SimpleSokoban board's length as the tiny random model solves the short ones."""

from __future__ import annotations

import pytest

from trainer.config import ConfigError, CurriculumConfig, load_config
from trainer.training.curriculum import Curriculum
from trainer.training.pipeline import Pipeline


def _curriculum(**fields) -> Curriculum:
    fields = {"kwarg": "max_solution_length", "stop": 10, "window": 3, "raise_at": 0.5, **fields}
    return Curriculum(CurriculumConfig(**fields), start=4)


def test_the_level_rises_once_the_average_of_a_full_window_reaches_the_threshold():
    curriculum = _curriculum()
    # two perfect steps are not a full window of three
    assert [curriculum.observe(s) for s in (1.0, 1.0)] == [None, None]
    assert curriculum.observe(0.0) == 5  # (1 + 1 + 0) / 3 >= 0.5
    # after it, a window averaging just under the threshold does not raise
    assert [curriculum.observe(s) for s in (0.5, 0.5, 0.47)] == [None, None, None]
    assert curriculum.observe(0.56) == 6  # the window now (0.5, 0.47, 0.56) averages 0.51


def test_after_a_raise_only_the_new_levels_steps_count():
    curriculum = _curriculum(window=2)
    assert curriculum.observe(0.6) is None
    assert curriculum.observe(0.6) == 5
    # the steps before the raise do not count toward the next one
    assert curriculum.observe(0.6) is None
    assert curriculum.observe(0.6) == 6


def test_the_level_stops_at_stop_even_when_the_increment_overshoots():
    curriculum = _curriculum(window=1, increment=4, stop=6)
    assert curriculum.observe(1.0) == 6
    assert curriculum.observe(1.0) is None
    assert curriculum.value == 6


def test_a_low_success_never_raises_the_level():
    curriculum = _curriculum(window=2)
    assert all(curriculum.observe(0.49) is None for _ in range(50))
    assert curriculum.value == 4


def test_the_state_round_trips_mid_window():
    curriculum = _curriculum()
    curriculum.observe(0.6)
    curriculum.observe(0.6)
    restored = _curriculum()
    restored.load_state_dict(curriculum.state_dict())
    assert restored.value == 4
    # the window held two steps: one more completes it, as it would have without the restart
    assert restored.observe(0.6) == 5


SOKOBAN = [
    "model.name=tiny-random",
    "model.lora=null",
    "env.id=SimpleSokoban-v0",
    "env.constrain_to_actions=true",
    "env.group_size=4",
    "env.groups_per_step=2",
    "sampling.max_new_tokens=1",
    "train.loggers=[jsonl]",
]
KNOB = "env.curriculum={kwarg: max_solution_length, stop: 3, raise_at: 0.01, window: 1}"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ([KNOB], "must name an integer of env.kwargs"),
        ([KNOB, "env.kwargs={max_solution_length: 3}"], "must be above the starting value"),
        (
            [KNOB, "env.kwargs={max_solution_length: 2}", "rollout.mode=ray"],
            "env.curriculum needs rollout.mode=local",
        ),
        (
            ["env.curriculum={kwarg: max_solution_length, stop: 3, raise_at: 2}"],
            "raise_at",
        ),
    ],
    ids=["kwarg-not-set", "stop-not-above-start", "ray", "raise-at-above-one"],
)
def test_a_bad_curriculum_is_refused_naming_the_field(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [*SOKOBAN, *overrides])


def test_a_run_raises_the_training_boards_and_resume_keeps_the_level(tmp_path):
    overrides = [
        *SOKOBAN,
        "env.kwargs={max_solution_length: 2, observation: relative, answer_format: {tag: null}}",
        "env.eval_kwargs={max_solution_length: 2}",
        KNOB,
        f"train.output_dir={tmp_path}",
    ]
    pipeline = Pipeline(load_config(None, overrides), log=None)
    first = pipeline.train_step()
    assert first["rollout/success"] > 0.01  # random play solves about half of 2-move boards
    assert first["curriculum/max_solution_length"] == 2.0  # what the step played with
    assert pipeline.rollouts.curriculum.value == 3
    assert pipeline.rollouts.manager.env_kwargs["max_solution_length"] == 3
    # the next step's envs are made with the new bound; evaluation keeps its own
    assert pipeline.rollouts.manager.make_env().unwrapped.max_solution_length == 3
    assert pipeline.rollouts.evaluation.manager.make_env().unwrapped.max_solution_length == 2
    second = pipeline.train_step()
    assert second["curriculum/max_solution_length"] == 3.0
    assert pipeline.rollouts.curriculum.value == 3  # at stop: stays
    pipeline.save()
    pipeline.close()

    resumed = Pipeline(load_config(None, overrides), resume=True, log=None)
    assert resumed.step == 2
    assert resumed.rollouts.curriculum.value == 3
    assert resumed.rollouts.manager.env_kwargs["max_solution_length"] == 3
    resumed.close()
