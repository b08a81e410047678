from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollenv.actions import AnswerFormat, tag_contents


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<answer>Up</answer>", ["Up"]),
        ("  <ANSWER> left </Answer>\n", ["left"]),
        ("<think>the box is\nbelow</think>\n<answer>Down</answer>", ["Down"]),
        ("<answer>Up || Left||Down</answer>", ["Up", "Left", "Down"]),
        ("Up", None),
        ("<answer>Up</answer> and more", None),
        ("text before <answer>Up</answer>", None),
        ("<answer></answer>", None),
        ("<answer>Up || </answer>", None),
        ("<think>a</think><think>b</think><answer>Up</answer>", None),
        ("<answer>Up", None),
        ("<answer>Up</answer><answer>Left</answer>", None),
    ],
)
def test_strict_extract(reply, expected):
    assert AnswerFormat(max_actions=3).extract(reply) == expected


def test_lenient_format_takes_the_last_answer_anywhere():
    fmt = AnswerFormat(strict=False)
    assert fmt.extract("I think <answer>Up</answer> no wait <answer>Left</answer>!") == ["Left"]


# replies made of tag pieces, so that openings without closings, nested and upper-case tags and
# half tags are common
tag_soup = st.lists(
    st.sampled_from(["<answer>", "</answer>", "<ANSWER>", "</Answer>", "<answer", "/", "a", "\n"]),
    max_size=14,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(reply=tag_soup)
def test_tag_contents_reads_what_the_lazy_regex_reads(reply):
    lazy = re.findall(r"<answer>(.*?)</answer>", reply, re.IGNORECASE | re.DOTALL)
    assert tag_contents(reply, "answer") == lazy


def test_openings_without_closings_are_read_once_each():
    # the regex retried every opening to the end of the reply: over 20 s for this one
    reply = "<answer>" * 12_000
    assert tag_contents(reply, "answer") == []
    # the first opening starts the tag; the openings after it are its content
    lenient = AnswerFormat(strict=False, separator=None)
    assert lenient.extract(reply + "<answer>Up</answer>") == ["<answer>" * 12_000 + "Up"]


def test_custom_tags_and_no_separator():
    fmt = AnswerFormat(tag="action", think_tag=None, separator=None)
    assert fmt.extract("<action>click[Buy || Now]</action>") == ["click[Buy || Now]"]
    assert fmt.extract("<think>x</think><action>a</action>") is None


def test_no_tag_takes_the_whole_reply():
    assert AnswerFormat(tag=None, separator=None).extract("def f(): pass") == ["def f(): pass"]


def test_wrap_round_trips():
    fmt = AnswerFormat(max_actions=2)
    assert fmt.extract(fmt.wrap(["Up", "Left"])) == ["Up", "Left"]
    assert fmt.wrap("Up") == "<answer>Up</answer>"


def test_describe_mentions_tags_and_limit():
    text = AnswerFormat(max_actions=3).describe()
    assert "<answer></answer>" in text and "up to 3" in text and "||" in text


def test_bad_max_actions_is_rejected():
    with pytest.raises(ValueError, match="max_actions"):
        AnswerFormat(max_actions=0)


def test_envs_take_an_answer_format_as_a_dict():
    import rollenv

    env = rollenv.make("FrozenLake-v0", answer_format={"tag": None, "separator": None})
    env.reset(seed=0)
    *_, info = env.step("Right")
    assert info["metrics"]["action_is_valid"] is True
    with pytest.raises(ValueError, match="bad answer_format"):
        rollenv.make("FrozenLake-v0", answer_format={"tagg": None})


# replies assembled from the pieces that decide a strict match: tags of both cases, a think
# block, whitespace, a stray "<", text around
_PIECES = ["<answer>", "</answer>", "<ANSWER>", "</Answer>", "<think>", "</think>", " ", "\n"]
_PIECES += ["Up", "<", "a<b", "||", "x"]


@given(st.lists(st.sampled_from(_PIECES), max_size=7), st.sampled_from(["answer", "move"]))
@settings(max_examples=400, deadline=None)
def test_strict_reading_without_the_regex_agrees_with_the_regex(pieces, tag):
    reply = "".join(pieces).replace("answer", tag).replace("ANSWER", tag.upper())
    fmt = AnswerFormat(tag=tag)
    match = fmt._pattern.fullmatch(reply)
    assert fmt.answer_text(reply) == (match.group(1) if match else None)
