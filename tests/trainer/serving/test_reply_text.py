"""``ReplyText``: the pieces a streamed reply sends add up to the whole decoded reply, and a
stop string cuts it exactly, wherever the token boundaries fall."""

from __future__ import annotations

import pytest

from trainer.models import load_tokenizer
from trainer.serving.reply_text import ReplyText


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("tiny-random")


TEXTS = [
    "Push the box left, then up.",
    "Grüße aus Köln 😀 und 漢字 too",
    "<answer>Up</answer> and more",
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_pieces_add_up_to_the_decoded_reply(tokenizer, text):
    ids = tokenizer.encode(text, add_special_tokens=False)
    reply = ReplyText(tokenizer, stops=[])
    pieces = [reply.add(token, -0.5) for token in ids] + [reply.finish()]
    assert "".join(pieces) == tokenizer.decode(ids, skip_special_tokens=True)
    assert sum(bool(p) for p in pieces) > 1  # sent as it came, not at the end
    assert all("\ufffd" not in p for p in pieces)  # never half a character
    assert reply.kept() == (ids, [-0.5] * len(ids))


def test_a_reply_cut_mid_character_ends_as_its_whole_decode(tokenizer):
    ids = tokenizer.encode("Köln 😀", add_special_tokens=False)
    cut = ids[:-1]  # the emoji's last byte never sampled
    whole = tokenizer.decode(cut, skip_special_tokens=True)
    assert whole.endswith("\ufffd")
    reply = ReplyText(tokenizer, stops=[])
    sent = "".join(reply.add(token, 0.0) for token in cut)
    assert "\ufffd" not in sent  # held back while more bytes could come
    assert sent + reply.finish() == reply.text == whole


@pytest.mark.parametrize(
    ("text", "stop", "before"),
    [
        ("Push the box left, then up.", "then", "Push the box left, "),
        ("Push the box left, then up.", "x left", "Push the bo"),  # starts inside a token
        ("Grüße aus Köln 😀 und", "😀", "Grüße aus Köln "),  # a character of several tokens
        ("<answer>Up</answer> and more", "</answer>", "<answer>Up"),
    ],
)
def test_a_stop_string_cuts_the_reply_before_it(tokenizer, text, stop, before):
    ids = tokenizer.encode(text, add_special_tokens=False)
    reply = ReplyText(tokenizer, stops=["never there", stop])
    sent = "".join(reply.add(token, 0.0) for token in ids)
    assert reply.stopped
    assert sent + reply.finish() == reply.text == before
    kept, _ = reply.kept()
    # the tokens kept are those whose text lies wholly before the stop string
    assert before.startswith(tokenizer.decode(kept))
    assert not before.startswith(tokenizer.decode(ids[: len(kept) + 1]))
    assert reply.add(ids[0], 0.0) == ""  # nothing after the stop


@pytest.mark.parametrize(
    ("text", "stop", "through"),
    [
        ("Push the box left, then up.", "then", "Push the box left, then"),
        ("Push the box left, then up.", "x le", "Push the box le"),  # ends inside a token
        ("<answer>Up</answer> and more", "</answer>", "<answer>Up</answer>"),
    ],
)
def test_keep_stop_ends_the_reply_after_the_stop_string(tokenizer, text, stop, through):
    ids = tokenizer.encode(text, add_special_tokens=False)
    reply = ReplyText(tokenizer, stops=[stop], keep_stop=True)
    sent = "".join(reply.add(token, 0.0) for token in ids)
    assert reply.stopped
    assert sent + reply.finish() == reply.text == through
    kept, _ = reply.kept()
    # up to the token that completed the stop string, as vLLM's include_stop_str_in_output
    assert tokenizer.decode(kept).startswith(through)
    assert not tokenizer.decode(kept[:-1]).startswith(through)


def test_text_that_may_begin_a_stop_string_is_held_back(tokenizer):
    reply = ReplyText(tokenizer, stops=["STOP"])
    ids = tokenizer.encode("go ST", add_special_tokens=False)
    sent = "".join(reply.add(token, 0.0) for token in ids)
    assert "ST" not in sent  # could be the start of STOP
    assert sent + reply.finish() == "go ST"  # it was not: the reply ended
