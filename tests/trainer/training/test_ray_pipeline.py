"""The pipeline with ``rollout.mode=ray``: env manager actors and a generator fleet on a real
local Ray cluster, training overlapping rollouts within ``async_generation_ratio`` steps."""

from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")

from tests.trainer.two_by_two_lake import TWO_BY_TWO_LAKE  # noqa: E402
from trainer.config import ConfigError, load_config  # noqa: E402
from trainer.rollout.portable_tokenizer import PortableTokenizer  # noqa: E402
from trainer.rollout.rollouts import Rollouts  # noqa: E402
from trainer.training.pipeline import Pipeline  # noqa: E402

BASE = [
    *TWO_BY_TWO_LAKE,
    # on Ray the samples depend on timing: groups of 8 make "every group drew equal returns, so
    # the weights did not move" far less likely than groups of 4
    "env.group_size=8",
    "train.eval_groups=3",
    "rollout.mode=ray",
    "rollout.env_managers=2",
    "rollout.envs_per_manager=4",
    "rollout.generator_cpus=0",
    "rollout.weight_bucket_mb=1",
]


@pytest.fixture
def local_ray(ray_cluster):
    """The module's Ray cluster (one start for all of them: each took 7 s of the test's time),
    left as empty as a new one: every pipeline closes its actors (killed actors die within
    seconds; the state API needs the dashboard, so the GCS's table is read)."""
    from ray._private.state import actors

    yield
    deadline = time.monotonic() + 30
    while alive := [a["ActorID"] for a in actors().values() if a["State"] != "DEAD"]:
        assert time.monotonic() < deadline, f"a test left actors running: {alive}"
        time.sleep(0.2)


def _trainable(pipeline: Pipeline) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in pipeline.strategy.model.named_parameters()}


def test_async_steps_train_on_groups_at_most_k_versions_old(tmp_path, local_ray):
    config = load_config(
        None, [*BASE, f"train.output_dir={tmp_path}", "rollout.async_generation_ratio=1"]
    )
    pipeline = Pipeline(config, log=None)
    try:
        assert isinstance(pipeline.rollouts, Rollouts)
        before = _trainable(pipeline)
        first = pipeline.train_step()
        # the step's own episodes' figures come with the schedulers' counters
        assert 0.0 <= first["rollout/success"] <= 1.0 and first["rollout/turns"] >= 1.0
        # step 1 started its own groups and step 2's (k=1), all under version 0
        assert pipeline.rollouts.scheduler.pending_groups == 2
        assert first["rollout/staleness_max"] == 0.0
        assert first["rollout/episodes_finished"] >= 16
        second = pipeline.train_step()
        assert second["rollout/staleness_max"] <= 1.0  # step 2 may train on version-0 groups
        after = _trainable(pipeline)
        assert any(not torch.equal(before[n], after[n]) for n in before)
        versions = {s["version"] for s in pipeline.rollouts.fleet.stats()}
        assert versions == {2}  # both updates were pushed to the fleet
        evaluation = pipeline.evaluate()
        assert 0.0 <= evaluation["eval/success"] <= 1.0
        assert evaluation["eval/turns"] >= 1.0
    finally:
        pipeline.close()
    assert ray.is_initialized()  # the pipeline did not start Ray here, so it leaves it running


@pytest.mark.parametrize("in_flight", ["next_turn", "recompute_prefix"])
def test_lora_in_an_async_run_reaches_the_generators_own_copy_after_every_update(
    tmp_path, local_ray, in_flight
):
    """``recompute_prefix`` gathers the pushed buckets and loads them between decode steps: the
    replicas must end up with the same weights as when they load between batches."""
    from trainer.generation.base import SamplingParams

    config = load_config(
        None,
        [
            *BASE,
            f"train.output_dir={tmp_path}",
            "rollout.async_generation_ratio=1",
            "rollout.partial_rollouts=true",
            "algorithm.off_policy_correction=tis",
            "model.lora={r: 4, alpha: 8}",
            "optim.lr=1e-2",
            f"rollout.in_flight_weights={in_flight}",
        ],
    )
    pipeline = Pipeline(config, log=None)
    prompt = [1, 5, 9, 2, 7]
    greedy = SamplingParams(max_new_tokens=3, temperature=0.0)

    def served() -> list[tuple[list[int], list[float]]]:
        outputs = ray.get(
            [r.generate.remote(prompt, greedy) for r in pipeline.rollouts.fleet.replicas]
        )
        return [(o.token_ids, o.logprobs) for o in outputs]

    try:
        seen = [served()]
        for step in (1, 2):
            metrics = pipeline.train_step()
            assert "policy/importance_weight_mean" in metrics
            now = served()
            # every replica's own copy moved, and serves what the trainer's weights compute
            pairs = zip(now, seen[-1], strict=True)
            assert all(logprobs != before[1] for (_, logprobs), before in pairs)
            for tokens, logprobs in now:
                mask = torch.tensor([0.0] * len(prompt) + [1.0] * len(tokens))
                [trainer], _ = pipeline.strategy.sequence_logprobs([prompt + tokens], [mask])
                torch.testing.assert_close(
                    trainer[len(prompt) :], torch.tensor(logprobs), atol=1e-4, rtol=0
                )
            assert {s["version"] for s in pipeline.rollouts.fleet.stats()} == {step}
            seen.append(now)
    finally:
        pipeline.close()


def test_a_resumed_ray_run_plays_the_next_steps_seeds_not_the_first_ones(tmp_path, local_ray):
    from trainer.rollout.seeds import step_seeds

    overrides = [*BASE, f"train.output_dir={tmp_path}", "train.seed=5"]
    config = load_config(None, overrides)
    groups = config.env.groups_per_step
    pipeline = Pipeline(config, log=None)
    try:
        pipeline.train_step()
        first_seeds = {t.seed for t in pipeline.rollouts._played}
        pipeline.save()
    finally:
        pipeline.close()
    assert first_seeds == set(step_seeds(5, 1, groups))

    resumed = Pipeline(load_config(None, overrides), log=None, resume=True)
    try:
        assert resumed.step == 1
        resumed.train_step()
        second_seeds = {t.seed for t in resumed.rollouts._played}
    finally:
        resumed.close()
    assert second_seeds == set(step_seeds(5, 2, groups))


def test_the_fleet_serves_the_policys_weights_from_the_start(tmp_path, local_ray):
    config = load_config(None, [*BASE, f"train.output_dir={tmp_path}", "train.seed=3"])
    pipeline = Pipeline(config, log=None)
    try:
        from trainer.generation import make_generator
        from trainer.generation.base import SamplingParams

        greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
        local = make_generator("continuous", pipeline.strategy.model, pipeline.tokenizer)
        expected = local.generate([[1, 2, 3]], greedy)[0].token_ids
        replica = pipeline.rollouts.fleet.replicas[0]
        assert ray.get(replica.generate.remote([1, 2, 3], greedy)).token_ids == expected
    finally:
        pipeline.close()


def test_ray_only_settings_are_refused_in_local_mode():
    with pytest.raises(
        ConfigError, match=r"rollout\.async_generation_ratio needs rollout\.mode=ray"
    ):
        load_config(None, ["rollout.async_generation_ratio=2"])


def test_env_manager_actors_hand_episodes_to_reward_workers(tmp_path, local_ray):
    config = load_config(
        None,
        [
            *BASE,
            f"train.output_dir={tmp_path}",
            "env.id=InstructionFollowing-v0",
            "env.kwargs={answer_format: {tag: null, separator: null}}",
            "env.constrain_to_actions=false",
            "env.max_turns=1",
            "sampling.max_new_tokens=8",
            "rollout.env_manager_cpus=0.25",
            "rewards.pool=true",
            "rewards.worker_cpus=0.25",
        ],
    )
    pipeline = Pipeline(config, log=None)
    try:
        played = []
        rollout = pipeline.rollouts.rollout
        pipeline.rollouts.rollout = lambda *a, **k: played.extend(rollout(*a, **k)) or played
        metrics = pipeline.train_step()
        assert len(played) == 16 and metrics["train/unscored_episodes"] == 0.0
        # each answer was scored by a rule worker, none in the env actors (an empty reply is
        # no answer: its format penalty needs no scoring)
        answered = [t for t in played if t.reward_request is not None]
        assert answered and all(t.reward_request["kind"] == "rule" for t in answered)
        assert pipeline.reward_pool.stats.requests_by_kind == {"rule": len(answered)}
        assert pipeline.reward_pool.stats.requests_scored == len(answered)
    finally:
        pipeline.close()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["rollout.generator_gpus=1"], "rollout.generator_replicas=1 × rollout.generator_gpus=1"),
        (  # a sharded update: the train workers' GPUs are counted with the fleet's
            ["rollout.generator_gpus=0.5", "train.strategy=fsdp2", "train.worker_gpus=1"],
            "train.workers=1 × train.worker_gpus=1 and rollout.generator_replicas=1 × "
            "rollout.generator_gpus=0.5 need 1.5 GPUs but the Ray cluster has 0",
        ),
    ],
)
def test_gpus_the_cluster_lacks_are_refused_before_any_actor_waits(
    tmp_path, local_ray, extra, named
):
    config = load_config(None, [*BASE, f"train.output_dir={tmp_path}", *extra])
    with pytest.raises(ConfigError) as error:
        Pipeline(config, log=None)
    assert named in str(error.value)
    assert "the Ray cluster has 0" in str(error.value)
    assert "rollout.generator_gpus=0.5 put a train worker and a generator on one" in str(
        error.value
    )


def test_on_ray_evaluation_plays_the_envs_of_eval_kwargs(tmp_path, local_ray, monkeypatch):
    # a lake whose start is walled in by holes: no evaluation episode can succeed, while the
    # training lake stays the reachable 2x2 one
    config = load_config(
        None, [*BASE, f"train.output_dir={tmp_path}", "env.eval_kwargs={desc: [SH, HG]}"]
    )
    stored, put = [], ray.put
    monkeypatch.setattr(
        ray, "put", lambda value, **kw: stored.append(type(value)) or put(value, **kw)
    )
    pipeline = Pipeline(config, log=None)
    try:
        rollouts = pipeline.rollouts
        assert len(rollouts.eval_actors) == config.rollout.env_managers
        # both sets of actors read one copy of the tokenizer from the object store
        assert stored.count(PortableTokenizer) == 1
        greedy = rollouts.eval_sampling
        evaluation = rollouts.play_evaluation([0, 1, 2], greedy, version=pipeline.step)
        walled = {t.first_observation for t in evaluation}
        trained = {t.first_observation for t in rollouts.rollout(step=1, version=0)}
        assert len(walled) == 1 and walled.isdisjoint(trained)
        assert pipeline.evaluate()["eval/success"] == 0.0
    finally:
        pipeline.close()
    # the evaluation actors were stopped with the rest. ray.kill returns before the actor is
    # gone, so a call right after it may still be answered (it was once, under -n 3): each
    # actor must stop answering within 30 s
    for actor in rollouts.eval_actors:
        deadline = time.monotonic() + 30
        with pytest.raises(ray.exceptions.RayActorError):
            while time.monotonic() < deadline:
                ray.get(actor.get_stats.remote(), timeout=30)
                time.sleep(0.1)
