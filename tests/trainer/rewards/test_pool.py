"""The reward pool on a real Ray cluster: rule verifiers scored in worker actors, a checker that
loops on a pathological reply cut at its deadline, a worker killed mid-batch replaced with no
request lost or scored twice, growth when batches wait, and a bad judge refused in one line."""

from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("math_verify")

from trainer.rewards.judge import JudgeUnreachableError  # noqa: E402
from trainer.rewards.pool import RewardPool, ScoreRequest  # noqa: E402
from trainer.rewards.rule import RuleScorer  # noqa: E402

IS_CORRECT = "environments.math.verify:is_correct"
IS_EQUIVALENT = "environments.math.verify:is_equivalent"
SLOWED = "trainer.rewards.rule:slowed"
# a tower of powers: sympy works on it far past any deadline (math-verify's own timeout needs
# SIGALRM, so it has none off a main thread)
PATHOLOGICAL = "9^{9^{9^{9^{9}}}}"


def test_a_rule_past_its_deadline_is_cut_and_the_next_call_runs_in_a_fresh_process():
    scorer = RuleScorer(deadline_s=2.0)
    try:
        started = time.monotonic()
        outcome = scorer.score(IS_EQUIVALENT, PATHOLOGICAL, {"reference": "1"})
        assert outcome.score is None and "did not finish within 2 s" in outcome.reason
        assert time.monotonic() - started < 10
        assert scorer.restarts == 1
        assert scorer.score(IS_CORRECT, "0.5", {"reference": "1/2"}).score == 1.0
        assert scorer.score(IS_CORRECT, "0.4", {"reference": "1/2"}).score == 0.0
        failed = scorer.score("environments.math.verify:nothing_here", "1", {})
        assert failed.score is None and "cannot be loaded" in failed.reason
    finally:
        scorer.close()


def test_a_rules_warm_up_runs_at_load_outside_the_calls_deadline(tmp_path, monkeypatch):
    (tmp_path / "warm_rule.py").write_text(
        "import time\n"
        "WARM = False\n"
        "def warm_up():\n"
        "    global WARM\n"
        "    time.sleep(2.0)\n"
        "    WARM = True\n"
        "def score(response):\n"
        "    return 1.0 if WARM else 0.0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # a spawned child gets the parent's sys.path
    scorer = RuleScorer(deadline_s=1.0)
    try:
        outcome = scorer.score("warm_rule:score", "x", {})
        assert outcome.score == 1.0 and outcome.reason == "scored"
    finally:
        scorer.close()


def test_rules_are_scored_by_the_workers_in_order(ray_cluster):
    pool = RewardPool(min_workers=1, max_workers=2, num_cpus=0.5, batch_size=2)
    try:
        answers = ["0.5", "\\frac{1}{2}", "0.4", "2/4", "1/2"]
        requests = [
            ScoreRequest.rule(10 + i, IS_CORRECT, a, reference="1/2") for i, a in enumerate(answers)
        ]
        results = pool.score(requests)
        assert [r.id for r in results] == [10, 11, 12, 13, 14]
        # 2/4 is not in lowest terms: not a result in the task's answer form
        assert [r.score for r in results] == [1.0, 1.0, 0.0, 0.0, 1.0]
    finally:
        pool.close()


def test_a_worker_killed_mid_batch_loses_and_doubles_nothing(ray_cluster):
    # each request holds its worker 1.5 s (a slow verifier), so a kill lands mid-request
    pool = RewardPool(min_workers=2, max_workers=2, num_cpus=0.5, rule_deadline_s=60.0)
    try:
        pool.score([ScoreRequest.rule(0, IS_CORRECT, "1", reference="1")])  # warm both paths
        slow = {"rule": IS_CORRECT, "delay_s": 1.5}  # slowed() calls the verifier after 1.5 s
        requests = [
            ScoreRequest(
                i,
                "rule",
                {"rule": SLOWED, "response": str(i), "data": {**slow, "reference": str(i % 3)}},
            )  # fmt: skip
            for i in range(12)
        ]
        future = pool.submit(requests)
        time.sleep(3.0)  # both workers are inside a request
        busy = pool.workers
        ray.kill(busy[-1])
        results = future.result(timeout=300)
        assert [r.id for r in results] == list(range(12))  # each once, in order
        assert [r.score for r in results] == [float(i == i % 3) for i in range(12)], results
        assert pool.stats.workers_replaced == 1 and pool.stats.batches_retried == 1
        assert pool.stats.requests_scored == 13  # the warm-up and the 12, none twice
    finally:
        pool.close()


def test_the_pool_grows_when_batches_wait(ray_cluster):
    pool = RewardPool(min_workers=1, max_workers=2, num_cpus=0.5, batch_size=1, grow_after=1)
    try:
        requests = [ScoreRequest.rule(i, IS_CORRECT, "3", reference="3") for i in range(8)]
        results = pool.score(requests)
        assert all(r.score == 1.0 for r in results), results
        assert pool.stats.peak_workers == 2 and pool.stats.workers_started == 2
    finally:
        pool.close()


def test_bad_input_is_one_line_before_any_worker_starts():
    with pytest.raises(JudgeUnreachableError, match="unreachable") as error:
        RewardPool(judge="openai:http://127.0.0.1:9/v1#judge")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="openai:http://HOST:PORT/v1#MODEL_ID"):
        RewardPool(judge="openai:localhost")
    with pytest.raises(ValueError, match="min_workers <= max_workers"):
        RewardPool(min_workers=3, max_workers=2)


def test_judge_requests_go_to_judge_workers_and_a_hanging_judge_holds_up_no_rule(
    ray_cluster, hanging_server
):
    pytest.importorskip("openai")
    pool = RewardPool(
        min_workers=1, max_workers=1, num_cpus=0.25, judge=f"openai:{hanging_server}#judge",
        judge_num_cpus=0.25, judge_timeout_s=3.0,
    )  # fmt: skip
    try:
        judged = pool.submit(
            [ScoreRequest.judged(i, "What is 1/2 + 1/4?", "3/4", reference="0.75") for i in (0, 1)]
        )
        rules = pool.submit([ScoreRequest.rule(2, IS_CORRECT, "0.5", reference="1/2")])
        assert [r.score for r in rules.result(timeout=60)] == [1.0]
        assert not judged.done()  # the judge is still waiting on its endpoint
        results = judged.result(timeout=120)
        assert all(r.score is None and "did not answer within 3 s" in r.reason for r in results)
        assert pool.stats.requests_by_kind == {"judge": 2, "rule": 1}
        assert pool.stats.workers_started == 2  # one of each kind
    finally:
        pool.close()


def test_without_a_judge_judge_requests_are_unscored_at_once(ray_cluster):
    pool = RewardPool(min_workers=1, max_workers=1, num_cpus=0.25)
    try:
        [result] = pool.score([ScoreRequest.judged(0, "q", "a", reference="a")])
        assert result.score is None and result.reason == "this pool has no judge"
        assert pool.stats.workers_started == 1
    finally:
        pool.close()


def test_workers_the_cluster_cannot_hold_are_refused_in_one_line(ray_cluster):
    with pytest.raises(ValueError, match=r"need 3.5 CPU \(3 rule workers x 1, 1 sandbox") as e:
        RewardPool(min_workers=3, max_workers=3, num_cpus=1)
    assert "\n" not in str(e.value)
