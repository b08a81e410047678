"""Every constraint kind, on replies worked out by hand: one that keeps it, one that does not."""

from __future__ import annotations

import pytest

from environments.instruction_following.constraints import (
    CONSTRAINT_KINDS,
    UnknownConstraintError,
    check,
    compatible,
    describe,
    paragraphs,
    sentence_count,
    validate,
    words,
)

# kind: (args, a reply that keeps it, a reply that does not)
CASES = {
    "word_count_at_least": ({"n": 5}, "one two three four five", "one two three four"),
    "word_count_at_most": ({"n": 4}, "don't stop me now", "please don't stop me now"),
    "sentence_count_at_least": ({"n": 3}, "One. Two! Three?", "One. Two and 3.5 more"),
    "paragraphs_exactly": ({"n": 2}, "First block.\n\nSecond block.", "One.\nStill one."),
    "include_keywords": (
        {"keywords": ["lantern", "silver"]},
        "A Silver lantern.",
        "A silver lanterns shop.",  # "lanterns" is not the word "lantern"
    ),
    "keyword_frequency": ({"keyword": "sea", "n": 2}, "Sea and sea.", "Sea and seaside."),
    "forbidden_words": ({"forbidden": ["very", "just"]}, "Justice every day.", "It is Very hot."),
    "letter_frequency": ({"letter": "q", "relation": "fewer than", "n": 2}, "Quiet.", "Quiz Q."),
    "json_format": ({}, '```json\n{"a": 1}\n```', "{'a': 1}"),
    "bullet_points_exactly": ({"n": 2}, "Intro\n- one\n* two", "- one\n-two\n*three*"),
    "sections_exactly": (
        {"n": 2, "marker": "SECTION"},
        "SECTION 1\nText.\nSECTION 2\nMore.",
        "SECTION 1\nText.\nSECTION 3\nMore.",
    ),
    "all_lowercase": ({}, "all small, 123.", "Not all small."),
    "all_uppercase": ({}, "ALL BIG, 123.", "ALL BIG but one."),
    "capital_words_at_least": ({"n": 2}, "It is VERY BIG.", "It is VERY Big, A."),
    "starts_with": ({"phrase": "Dear reader"}, "  dear reader, hello.", "Hello, dear reader."),
    "ends_with": ({"phrase": "The end."}, "A tale. The End.  ", "The end. Or not."),
    "postscript": ({"marker": "P.S."}, "Hello.\np.s. bye", "P.S. only a postscript"),
    "title": ({}, "<<My title>>\nText.", "<My title>\nText."),
    "placeholders_at_least": ({"n": 2}, "Send [name] to [address].", "Send [name] to []."),
    "highlighted_at_least": ({"n": 2}, "*one* and *two*", "* one* and **"),
    "no_commas": ({}, "No commas here.", "One, two."),
    "quoted": ({}, ' "A quote." ', '"A quote.'),
    "two_responses": ({}, "First.\n******\nSecond.", "Same.\n******\nSame."),
}


def test_every_kind_has_a_case():
    assert sorted(CASES) == sorted(CONSTRAINT_KINDS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_reply_that_keeps_it_passes_and_one_that_does_not_fails(kind):
    args, keeps, breaks = CASES[kind]
    constraint = {"kind": kind, "args": args}
    validate(constraint)
    assert check(constraint, keeps) is True
    assert check(constraint, breaks) is False
    assert describe(constraint).endswith((".", ":", " ******"))


def test_counting_is_what_the_prompt_says():
    assert words("It's 5 o'clock - in Paris!") == ["It's", "5", "o'clock", "in", "Paris"]
    assert sentence_count("Pi is 3.14. Really? Yes!!") == 3
    assert sentence_count('He said "Stop." (And left.)') == 2
    assert paragraphs("a\n\n\n b \n \nc") == ["a", "b", "c"]


def test_the_arguments_are_written_out_in_the_instruction():
    assert describe({"kind": "include_keywords", "args": {"keywords": ["a", "b", "c"]}}) == (
        'Include the keywords "a", "b" and "c".'
    )
    text = describe(
        {"kind": "letter_frequency", "args": {"letter": "z", "relation": "fewer than", "n": 2}}
    )
    assert text == 'Use the letter "z" fewer than 2 times (either case).'


def test_an_unknown_kind_or_bad_arguments_are_one_clear_line():
    with pytest.raises(UnknownConstraintError, match="did you mean: no_commas") as error:
        validate({"kind": "no_comma", "args": {}})
    assert "\n" not in str(error.value)
    with pytest.raises(UnknownConstraintError, match=r"takes the arguments \['n'\], got \['m'\]"):
        validate({"kind": "word_count_at_most", "args": {"m": 3}})
    with pytest.raises(UnknownConstraintError, match="a constraint is a mapping"):
        validate("no_commas")


def test_kinds_that_claim_the_same_part_of_a_reply_are_incompatible():
    assert compatible(["no_commas", "title", "ends_with", "all_lowercase"])
    assert not compatible(["json_format", "no_commas"])  # JSON has commas
    assert not compatible(["bullet_points_exactly", "sections_exactly"])
    assert not compatible(["quoted", "postscript"])


POSTSCRIPT = {"kind": "postscript", "args": {"marker": "P.S."}}


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        ("Hello.\n  P.S. bye", True),  # indented on its own line
        ("\n\nP.S. bye", False),  # no text of the reply's own before it
        ("Hello.\nP.S.", False),  # nothing after the marker
        ("Hello. P.S. bye", False),  # not on a line of its own
        ("Hello.\n\nP.S.\tbye\n", True),
    ],
)
def test_a_postscript_is_a_line_starting_with_the_marker_after_some_text(reply, kept):
    assert check(POSTSCRIPT, reply) is kept


def test_a_long_reply_is_checked_for_a_postscript_at_once():
    # the first pattern backtracked quadratically: 9 s for seed 10 of InstructionFollowing-v0
    # in check_reward, and minutes for this reply; a linear search answers in milliseconds
    reply = "word " * 100_000
    assert check(POSTSCRIPT, reply) is False
    assert check(POSTSCRIPT, reply + "\nP.S. bye") is True
