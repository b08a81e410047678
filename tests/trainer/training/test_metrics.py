from __future__ import annotations

import importlib.util
import json

import pytest

from trainer.training.metrics import MetricsLogger, MissingExtraError


def test_jsonl_and_tensorboard_get_every_finite_metric(tmp_path):
    logger = MetricsLogger(tmp_path, ["jsonl", "tensorboard"])
    logger.log(1, {"rollout/success": 0.5, "loss": float("nan"), "grad_norm": 2.0})
    logger.log(2, {"rollout/success": 0.75})
    logger.close()
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records == [
        {"step": 1, "rollout/success": 0.5, "grad_norm": 2.0},
        {"step": 2, "rollout/success": 0.75},
    ]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("rollout/success")] == [(1, 0.5), (2, 0.75)]


@pytest.mark.parametrize("sink", ["wandb", "swanlab"])
def test_a_missing_tracker_names_its_install(tmp_path, sink):
    if importlib.util.find_spec(sink) is not None:
        pytest.skip(f"{sink} is installed here, so its missing-package message cannot show")
    with pytest.raises(MissingExtraError, match=f"pip install {sink}"):
        MetricsLogger(tmp_path, [sink])
