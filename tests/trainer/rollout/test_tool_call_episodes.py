"""Episodes in the ``tools`` action format: the ids trained on are the ids sampled, and each
tool turn is tokenised once, with rollenv's SmolLM2 rendering and with a Hermes-style template."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from rollenv.policies import oracle_for
from tests.trainer.rollout.test_env_manager import Recording
from trainer.generation import GenerationOutput, HFGenerator, SamplingParams
from trainer.models import load_model
from trainer.rollout.chat_tokens import ChatTokens
from trainer.rollout.env_manager import EnvManager
from trainer.tool_call_formats import tool_call_format

TEMPLATES = Path(__file__).parents[1] / "tool_call_formats" / "templates"
# rendering name -> (tool-call format, the template to put on the SmolLM2 tokenizer or None)
RENDERINGS = {"smollm2": ("smollm2", None), "hermes-template": ("hermes", "hermes")}


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-random", seed=0)


def _tokenizer(tiny, template: str | None):
    _, tokenizer = tiny
    if template is None:
        return tokenizer
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = (TEMPLATES / f"{template}.jinja").read_text()
    return tokenizer


class CallsOneCharacterAToken:
    """Samples a ``move`` call in Hermes' tags, each character its own token: ids the tokenizer
    would never give that text (it merges them), so re-tokenising a reply would show."""

    def __init__(self, tokenizer, seed: int = 0):
        self.tokenizer = tokenizer
        self.rng = random.Random(seed)

    def generate(self, prompts, params):
        outputs = []
        for _ in prompts:
            direction = self.rng.choice(["Up", "Down", "Left", "Right"])
            call = json.dumps({"name": "move", "arguments": {"direction": direction}})
            text = f"<tool_call>\n{call}\n</tool_call>"
            ids = [
                self.tokenizer.convert_tokens_to_ids(c)
                for c in text.replace(" ", "Ġ").replace("\n", "Ċ")
            ]
            assert ids != self.tokenizer.encode(text, add_special_tokens=False)
            ids.append(self.tokenizer.eos_token_id)
            outputs.append(GenerationOutput(ids, [-0.5] * len(ids), "stop"))
        return outputs


def _manager(tiny, rendering: str, *, calls: bool = False, **kwargs):
    fmt, template = RENDERINGS[rendering]
    model, _ = tiny
    tokenizer = _tokenizer(tiny, template)
    source = CallsOneCharacterAToken(tokenizer) if calls else HFGenerator(model, tokenizer)
    generator = Recording(source)
    sampling = SamplingParams(max_new_tokens=24, stop_token_ids=(tokenizer.eos_token_id,), seed=3)
    settings = {
        "group_size": 2,
        "max_turns": 5,
        "sampling": sampling,
        "env_kwargs": {"action_format": "tools"},
        "tool_call_format": fmt,
        "max_context_tokens": 16_384,
    } | kwargs
    return EnvManager("Sokoban-v0", tokenizer, generator, **settings), generator, tokenizer


@pytest.mark.parametrize("calls", [True, False], ids=["calls", "random-replies"])
@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
def test_trained_ids_are_the_sampled_ids_and_each_tool_turn_tokenised_once(tiny, rendering, calls):
    manager, generator, tokenizer = _manager(tiny, rendering, calls=calls, context="full")
    trajectories = manager.rollout(seeds=[4])
    chat = ChatTokens(tokenizer, tool_format=manager.tool_format)
    for trajectory in trajectories:
        assert len(trajectory.turns) == 5  # a random policy does not solve a board in 5 turns
        (sample,) = trajectory.samples
        # rebuild the sequence from what was sampled and what the envs answered
        env = manager._envs[trajectories.index(trajectory)]
        messages = env.messages
        first_prompt = next(
            p for prompts, _ in generator.calls for p in prompts if sample.token_ids[: len(p)] == p
        )
        expected, position = list(first_prompt), len(first_prompt)
        replies = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        for turn in range(5):
            output = next(
                o
                for prompts, outputs in generator.calls
                for p, o in zip(prompts, outputs, strict=True)
                if p == sample.token_ids[:position]
                and sample.token_ids[position : position + len(o.token_ids)] == o.token_ids
            )
            expected += output.token_ids
            position += len(output.token_ids)
            # an episode cut at max_turns has its last answer appended as well
            if turn < 4 or trajectory.finish_reason == "max_turns":
                answers = messages[replies[turn] + 1 : [*replies, len(messages)][turn + 1]]
                # a call is answered by a tool message; a reply with none, by a user message
                roles = [m["role"] for m in answers]
                assert roles == (["tool"] if calls else roles) and roles in (["tool"], ["user"])
                ended = output.token_ids[-1:] == [tokenizer.eos_token_id]
                following = chat.next_messages(answers, ended)
                expected += following
                position += len(following)
        assert sample.token_ids == expected
        # exactly the sampled ids carry the loss
        sampled = [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if m]
        assert len(sampled) == sum(turn.response_tokens for turn in trajectory.turns)
        if calls:
            assert all(turn.metrics["action_is_valid"] for turn in trajectory.turns)


@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
def test_oracle_tool_episodes_read_as_the_whole_chat_rendered(tiny, rendering):
    manager, _, tokenizer = _manager(tiny, rendering, context="full", group_size=1, max_turns=10)
    trajectory = manager.rollout(seeds=[3], policy=oracle_for)[0]
    assert trajectory.success and len(trajectory.turns) >= 2
    assert all(turn.metrics["action_is_valid"] for turn in trajectory.turns)
    messages = manager._envs[0].messages
    last_reply = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    tools = json.loads(json.dumps(manager._envs[0].env.unwrapped.openai_tools()))
    rendered = manager.tool_format.render(
        tokenizer, messages[: last_reply + 1], tools, add_generation_prompt=False
    )
    # built turn by turn, the sequence reads exactly as the template renders the whole chat
    assert tokenizer.decode(trajectory.samples[0].token_ids) == rendered.removesuffix("\n")


@pytest.mark.parametrize("rendering", sorted(RENDERINGS))
def test_window_context_renders_each_prompt_with_the_tools(tiny, rendering):
    manager, _, tokenizer = _manager(tiny, rendering, context="window", window=1, max_turns=3)
    for trajectory in manager.rollout(seeds=[2]):
        assert len(trajectory.samples) == len(trajectory.turns) == 3
        for sample in trajectory.samples:
            prompt = tokenizer.decode(
                [t for t, m in zip(sample.token_ids, sample.loss_mask, strict=True) if not m]
            )
            assert '"name": "move"' in prompt  # the tool listing


def test_a_template_that_rewrites_earlier_turns_is_refused_in_one_line(tiny):
    tokenizer = _tokenizer(tiny, "hermes")
    # a reply that tool results follow is shown shortened (as templates that strip an earlier
    # turn's reasoning do): the sampled ids would no longer be the ids of the prompt
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{% if message['content'] %}{{ message['content'] }}{% endif %}",
        "{% if message['content'] and (loop.last or messages[loop.index0 + 1]['role'] != 'tool')"
        " %}{{ message['content'] }}{% elif message['content'] %}(earlier reply){% endif %}",
    )
    chat = ChatTokens(tokenizer, tool_format=tool_call_format("hermes"))
    answer = [{"role": "tool", "tool_call_id": "call_1", "content": "Board"}]
    with pytest.raises(ValueError, match="rewrites earlier turns when tool messages follow"):
        chat.next_messages(answer, reply_ended_turn=True)
