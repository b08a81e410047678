"""The config documents itself: every field has a description, and ``roll-agent config``
prints each with its default and allowed values."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ConfigDict

from trainer.cli.main import main
from trainer.config import MOVED_KEYS, REMOVED_KEYS, Config, ConfigError, load_config
from trainer.config_reference import config_fields


def test_every_config_field_has_a_description():
    fields = config_fields()
    undocumented = [doc.key for doc in fields if not doc.description.strip()]
    assert not undocumented, f"config fields without a docstring: {undocumented}"
    assert len(fields) > 100  # the walk reached the sections' fields, not only the sections


def test_the_descriptions_are_in_the_json_schema():
    schema = Config.model_json_schema()
    models = {"Config": schema, **schema["$defs"]}
    missing = [
        f"{model}.{name}"
        for model, definition in models.items()
        for name, field in definition["properties"].items()
        if not field.get("description")
    ]
    assert not missing
    zero_stage = schema["$defs"]["DeepSpeedConfig"]["properties"]["zero_stage"]
    assert zero_stage["description"].startswith("ZeRO's stage")


def test_a_field_without_a_docstring_is_found():
    class Undocumented(BaseModel):
        model_config = ConfigDict(use_attribute_docstrings=True)

        documented: int = 1
        """Has one."""
        bare: int = 2

    missing = [doc.key for doc in config_fields(Undocumented) if not doc.description]
    assert missing == ["bare"]


def test_defaults_and_allowed_values_come_from_the_model():
    docs = {doc.key: doc for doc in config_fields()}
    assert docs["sampling.top_p"].allowed == "float, > 0 to 1"
    assert docs["sampling.top_p"].default == "1.0"
    assert docs["generation.backend"].allowed == "'continuous', 'hf', 'vllm' or 'sglang'"
    assert docs["train.max_minutes"].allowed == "float, > 0, or null"
    assert docs["train.max_minutes"].default == "null"
    assert docs["algorithm.name"].allowed.startswith("a registered algorithm: ")
    assert "gigpo" in docs["algorithm.name"].allowed
    assert docs["train.deepspeed"].section and docs["model.lora"].allowed == "a section, or null"
    assert docs["env.curriculum.kwarg"].default == "(required)"


def test_roll_agent_config_prints_every_field(capsys):
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    for doc in config_fields():
        assert f"\n{doc.key}  " in f"\n{out}"
    assert "train.deepspeed.zero_stage  default 2  [int, 1 to 3]" in out


def test_roll_agent_config_shows_a_runs_values_beside_the_defaults(capsys):
    preset = load_config("sokoban")
    assert main(["config", "train.max_minutes", "--env", "sokoban"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"train.max_minutes = {preset.train.max_minutes!r}  (default null)")
    assert main(["config", "optim.lr", "--set", "optim.lr=0.001"]) == 0
    assert capsys.readouterr().out.startswith("optim.lr = 0.001  (default 1e-05)")


def test_roll_agent_config_json_lists_the_same_fields(capsys):
    assert main(["config", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["key"] for row in rows] == [doc.key for doc in config_fields()]
    assert all(row["description"] for row in rows)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("train.zero_stag", "no config field 'train.zero_stag'; did you mean train."),
        ("train.zero_stage", "train.zero_stage moved to train.deepspeed.zero_stage"),
        ("train.pipeline_parallel", "train.pipeline_parallel was removed: it did nothing"),
    ],
)
def test_roll_agent_config_names_an_unknown_key_in_one_line(key, message, capsys):
    assert main(["config", key]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("old", sorted(MOVED_KEYS))
def test_a_moved_key_names_its_new_place(old):
    with pytest.raises(ConfigError) as refused:
        load_config(None, [f"{old}=1"])
    assert str(refused.value) == (
        f"{old}: moved to {MOVED_KEYS[old]} (e.g. --set {MOVED_KEYS[old]}=...)"
    )


@pytest.mark.parametrize("old", sorted(REMOVED_KEYS))
def test_a_removed_key_says_why(old):
    with pytest.raises(ConfigError, match=f"^{old}: removed: it did nothing"):
        load_config(None, [f"{old}=2"])


def test_the_moved_keys_new_places_exist():
    keys = {doc.key for doc in config_fields()}
    assert set(MOVED_KEYS.values()) <= keys
    assert not (set(MOVED_KEYS) | set(REMOVED_KEYS)) & keys


def test_a_strategys_options_apply_to_that_strategy_only():
    config = load_config(None, ["train.strategy=deepspeed", "train.deepspeed.zero_stage=3"])
    assert config.train.deepspeed.zero_stage == 3
    with pytest.raises(
        ConfigError,
        match=r"train.deepspeed.zero_stage are options of train.strategy=deepspeed \(got "
        r"train.strategy=fsdp2\)",
    ):
        load_config(None, ["train.strategy=fsdp2", "train.deepspeed.zero_stage=3"])


def test_offloading_parameters_needs_zero_3_in_the_config():
    with pytest.raises(ConfigError, match="set train.deepspeed.zero_stage=3 \\(got 2\\)"):
        load_config(None, ["train.strategy=deepspeed", "train.deepspeed.offload_params=true"])
    load_config(
        None,
        [
            "train.strategy=deepspeed",
            "train.deepspeed.zero_stage=3",
            "train.deepspeed.offload_params=true",
        ],
    )
