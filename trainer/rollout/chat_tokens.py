"""Chat-template token building that never re-tokenises what the model sampled.

In full-context mode an episode is one growing token sequence: the first prompt, then each
sampled reply exactly as sampled, then the tokens that close the reply and open the next user
turn. Re-rendering the whole chat through the template each turn would re-tokenise earlier
replies, and the ids could differ from the sampled ones (then PPO ratios are silently wrong).
So this class renders the template once with a placeholder reply to learn what text follows a
reply, and tokenises only the new user turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


Message = dict[str, str]
_PLACEHOLDER = "\x00rollenv-reply\x00"
_USER_PLACEHOLDER = "\x00rollenv-user\x00"


class ChatTokens:
    """Token ids of chat prompts for one tokenizer's chat template.

    Args:
        tokenizer: a tokenizer with a chat template and an end-of-turn (eos) token.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        if tokenizer.chat_template is None:
            raise ValueError("the tokenizer has no chat template; rollenv needs a chat model")
        self.tokenizer = tokenizer
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

    def prompt(self, messages: list[Message]) -> list[int]:
        """The whole chat as a prompt ending in the assistant's turn opening."""
        return self._encode(self._render(messages, True))

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
