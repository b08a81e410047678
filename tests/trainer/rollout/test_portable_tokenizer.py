"""PortableTokenizer gives the ids and chats of the transformers tokenizer it copies."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.models import load_tokenizer
from trainer.rollout.chat_tokens import ChatTokens
from trainer.rollout.portable_tokenizer import PortableTokenizer
from trainer.tool_call_formats import tool_call_format_for

TEMPLATES = Path(__file__).parents[1] / "tool_call_formats" / "templates"

HF = load_tokenizer("tiny-random")
PORTABLE = PortableTokenizer.from_hf(HF)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_encode_and_decode_match_transformers(text):
    ids = HF.encode(text, add_special_tokens=False)
    assert PORTABLE.encode(text) == ids
    assert PORTABLE.decode(ids, skip_special_tokens=True) == HF.decode(
        ids, skip_special_tokens=True
    )


def test_special_tokens_decode_and_ids_match():
    ids = HF.encode("<|im_start|>user\nhi<|im_end|>", add_special_tokens=False)
    assert PORTABLE.encode("<|im_start|>user\nhi<|im_end|>") == ids
    assert PORTABLE.decode(ids) == HF.decode(ids)
    assert PORTABLE.eos_token_id == HF.eos_token_id
    assert PORTABLE.pad_token_id == HF.pad_token_id


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "Push the box onto the target."}],
        [{"role": "system", "content": "Rules."}, {"role": "user", "content": "State:\n#_#"}],
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "<answer>Up</answer>"},
            {"role": "user", "content": "ünïcode ✓"},
        ],
    ],
)
@pytest.mark.parametrize("generation_prompt", [True, False])
def test_chat_template_renders_as_transformers_does(messages, generation_prompt):
    ours = PORTABLE.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation_prompt
    )
    theirs = HF.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=generation_prompt
    )
    assert ours == theirs
    assert PORTABLE.apply_chat_template(messages, add_generation_prompt=generation_prompt) == (
        HF.encode(theirs, add_special_tokens=False)
    )


def test_chat_tokens_build_the_same_episode_prompts():
    ours, theirs = ChatTokens(PORTABLE), ChatTokens(HF)
    chat = [{"role": "system", "content": "rules"}, {"role": "user", "content": "state 1"}]
    assert ours.prompt(chat) == theirs.prompt(chat)
    for ended in (True, False):
        assert ours.next_turn("state 2", ended) == theirs.next_turn("state 2", ended)


@pytest.mark.parametrize("template", [None, "hermes"])
def test_tool_chats_render_and_continue_as_with_transformers(template):
    hf = copy.deepcopy(HF)
    if template is not None:
        hf.chat_template = (TEMPLATES / f"{template}.jinja").read_text()
    portable = PortableTokenizer.from_hf(hf)
    fmt = tool_call_format_for("auto", hf)
    assert tool_call_format_for("auto", portable) is fmt
    ours, theirs = ChatTokens(portable, tool_format=fmt), ChatTokens(hf, tool_format=fmt)
    tools = [{"type": "function", "function": {"name": "move", "parameters": {}}}]
    chat = [{"role": "system", "content": "rules"}, {"role": "user", "content": "state 1"}]
    assert ours.prompt(chat, tools) == theirs.prompt(chat, tools)
    answer = [{"role": "tool", "tool_call_id": "call_1", "content": "state 2"}]
    for ended in (True, False):
        assert ours.next_messages(answer, ended) == theirs.next_messages(answer, ended)


def test_pickles_and_loads_in_a_process_without_torch(tmp_path):
    path = tmp_path / "tokenizer.pkl"
    path.write_bytes(pickle.dumps(PORTABLE))
    script = (
        "import pickle, sys\n"
        f"t = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "print(t.encode('Push the box.'))\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'heavy import'\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(HF.encode("Push the box.", add_special_tokens=False))


def test_env_manager_modules_do_not_import_torch():
    script = (
        "import sys\n"
        "import trainer.rollout.env_actor, trainer.rollout.scheduler\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_slow_tokenizer_is_refused_with_the_reason():
    class Slow:
        chat_template = None

    with pytest.raises(ValueError, match="not a fast tokenizer"):
        PortableTokenizer.from_hf(Slow())
