"""Chat-template token building that never re-tokenises what the model sampled.

In full-context mode an episode is one growing token sequence: the first prompt, then each
sampled reply exactly as sampled, then the tokens that close the reply and open the next user
turn. Re-rendering the whole chat through the template each turn would re-tokenise earlier
replies, and the ids could differ from the sampled ones (then PPO ratios are silently wrong).
So this class renders the template once with a placeholder reply to learn what text follows a
reply, and tokenises only the new user turn.

With a tool-call format (the ``tools`` action format) the prompt holds the tools, and what
follows a reply is the ``role: tool`` messages that answer its calls: rendered after a
placeholder reply and cut off where the reply's own rendering ends, so the sampled ids stay
as sampled and the tool turn is tokenised once. A template whose rendering of the earlier
turns changes when tool messages follow is refused in one line.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from trainer.tool_call_formats import ToolCallFormat


Message = dict[str, Any]
_PLACEHOLDER = "\x00rollenv-reply\x00"
_USER_PLACEHOLDER = "\x00rollenv-user\x00"
_TOOL_PROBE = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "content": _PLACEHOLDER},
]


class ChatTokens:
    """Token ids of chat prompts for one tokenizer's chat template.

    Args:
        tokenizer: a tokenizer with a chat template and an end-of-turn (eos) token.
        tool_format: how tools, calls and tool results are rendered (the ``tools`` action
            format); ``None`` for text actions.
    """

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase, tool_format: ToolCallFormat | None = None
    ):
        if tokenizer.chat_template is None:
            raise ValueError("the tokenizer has no chat template; rollenv needs a chat model")
        self.tokenizer = tokenizer
        self.tool_format = tool_format
        self.end_of_turn_id = tokenizer.eos_token_id
        self.end_of_turn_text = tokenizer.decode([self.end_of_turn_id])
        probe = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        with_reply = self._render(probe + [{"role": "assistant", "content": _PLACEHOLDER}], False)
        # what the template writes after a reply's content, e.g. "<|im_end|>\n" in ChatML
        self._after_reply = with_reply.split(_PLACEHOLDER, 1)[1]
        with_next = self._render(
            probe
            + [
                {"role": "assistant", "content": _PLACEHOLDER},
                {"role": "user", "content": _USER_PLACEHOLDER},
            ],
            True,
        )
        if not with_next.startswith(with_reply):
            raise ValueError("the chat template rewrites earlier turns; use window context mode")
        following = with_next[len(with_reply) :]
        self._next_user_prefix, self._next_user_suffix = following.split(_USER_PLACEHOLDER, 1)

    def _render(self, messages: list[Message], add_generation_prompt: bool) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def prompt(
        self, messages: list[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """The whole chat as a prompt ending in the assistant's turn opening (with ``tools``,
        rendered by the tool-call format)."""
        if self.tool_format is not None:
            return self._encode(self.tool_format.render(self.tokenizer, messages, tools))
        return self._encode(self._render(messages, True))

    def _render_probe(self, messages: list[Message], add_generation_prompt: bool) -> str:
        """``messages`` rendered by the tool-call format, or by the chat template without one."""
        if self.tool_format is not None:
            return self.tool_format.render(
                self.tokenizer, messages, add_generation_prompt=add_generation_prompt
            )
        return self._render(messages, add_generation_prompt)

    @functools.cached_property
    def _reply_probe(self) -> str:
        """A placeholder reply after a short chat, rendered (once)."""
        return self._render_probe(_TOOL_PROBE, add_generation_prompt=False)

    def next_messages(self, messages: Sequence[Message], reply_ended_turn: bool) -> list[int]:
        """Tokens to append after a sampled reply: close it, add ``messages`` (the tool
        results, or user messages), open the next assistant turn. With a tool-call format they
        are rendered by it (the ``tools`` format), else by the chat template.

        Raises:
            ValueError: the template renders the earlier turns differently once these
                messages follow (one line; ``context: window`` renders each prompt whole).
        """
        with_reply = self._reply_probe  # the same every turn: rendered once
        with_next = self._render_probe([*_TOOL_PROBE, *messages], add_generation_prompt=True)
        if not with_next.startswith(with_reply):
            raise ValueError(
                f"the chat template rewrites earlier turns when {messages[0]['role']} messages "
                "follow a reply; use context: window"
            )
        closing = with_reply.split(_PLACEHOLDER, 1)[1]  # "<|im_end|>\n" in ChatML
        if reply_ended_turn and closing.startswith(self.end_of_turn_text):
            closing = closing[len(self.end_of_turn_text) :]
        return self._encode(closing + with_next[len(with_reply) :])

    def next_turn(self, user_content: str, reply_ended_turn: bool) -> list[int]:
        """Tokens to append after a sampled reply: close it, add the user turn, open the next.

        Args:
            user_content: the new user message.
            reply_ended_turn: whether the reply's last sampled token was the end-of-turn token
                (a reply cut at the token limit is closed here instead).
        """
        closing = self._after_reply
        if reply_ended_turn and closing.startswith(self.end_of_turn_text):
            closing = closing[len(self.end_of_turn_text) :]
        text = closing + self._next_user_prefix + user_content + self._next_user_suffix
        return self._encode(text)
