"""``PortableTokenizer``: the part of a tokenizer an env manager needs, without torch.

An env manager actor only encodes prompts, decodes replies and renders the chat template. With
a ``transformers`` tokenizer each actor process imports torch as well (``AutoTokenizer`` does),
about 300 MB more per actor, for nothing. This class keeps the fast tokenizer's JSON, the chat
template and the special tokens as plain strings: it pickles small, crosses Ray nodes as data
(no file needs to exist on the other node), and is rebuilt on arrival with the ``tokenizers``
library and jinja2 alone.

Its ids and rendered chats equal the ``transformers`` tokenizer's it was made from (a test
checks both on many strings and chats).

Example:
    >>> from trainer.models import load_tokenizer
    >>> portable = PortableTokenizer.from_hf(load_tokenizer("tiny-random"))
    >>> portable.decode(portable.encode("Push the box."))
    'Push the box.'
    >>> chat = [{"role": "user", "content": "hi"}]
    >>> portable.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)[-10:]
    'assistant\\n'
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PortableTokenizer"]

Message = dict[str, Any]


class PortableTokenizer:
    """A fast tokenizer and its chat template, rebuilt from strings.

    Args:
        tokenizer_json: the fast tokenizer, serialised (``backend_tokenizer.to_str()``).
        chat_template: the jinja2 chat template.
        special_tokens: ``bos_token``, ``eos_token``, ``pad_token`` ... as text (the template
            may use them; ``eos_token`` and ``pad_token`` give the ids).
    """

    def __init__(
        self, tokenizer_json: str, chat_template: str | None, special_tokens: dict[str, str]
    ) -> None:
        from tokenizers import Tokenizer

        self._state = (tokenizer_json, chat_template, dict(special_tokens))
        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self.chat_template = chat_template
        self.special_tokens = dict(special_tokens)
        self.eos_token_id = self._id_of(special_tokens.get("eos_token"))
        self.pad_token_id = self._id_of(special_tokens.get("pad_token")) or self.eos_token_id
        self._template: Any = None

    @classmethod
    def from_hf(cls, tokenizer: Any) -> PortableTokenizer:
        """The portable copy of a ``transformers`` fast tokenizer."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError(
                f"{type(tokenizer).__name__} is not a fast tokenizer (no backend_tokenizer); "
                "env manager actors need one"
            )
        special = {
            name: str(value)
            for name in ("bos_token", "eos_token", "pad_token", "unk_token")
            if (value := getattr(tokenizer, name, None)) is not None
        }
        return cls(backend.to_str(), tokenizer.chat_template, special)

    def __reduce__(self) -> tuple[Any, ...]:
        return (PortableTokenizer, self._state)

    def _id_of(self, token: str | None) -> int | None:
        return None if token is None else self._tokenizer.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``."""
        return self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, token_ids: list[int], skip_special_tokens: bool = False) -> str:
        """Text of ``token_ids``."""
        return self._tokenizer.decode(list(token_ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(
        self,
        messages: list[Message],
        *,
        tokenize: bool = True,
        add_generation_prompt: bool = False,
        tools: list[dict[str, Any]] | None = None,
    ) -> str | list[int]:
        """Renders ``messages`` (and ``tools``, for a template with a tools branch) with the
        chat template, as ``transformers`` does."""
        if self.chat_template is None:
            raise ValueError("the tokenizer has no chat template")
        if self._template is None:
            self._template = _compile(self.chat_template)
        text = self._template.render(
            messages=messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            **self.special_tokens,
        )
        return self.encode(text) if tokenize else text


def _compile(source: str) -> Any:
    """The template in a sandboxed jinja2 environment with the helpers chat templates use."""
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        from jinja2.exceptions import TemplateError

        raise TemplateError(message)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    environment.filters["tojson"] = lambda value, indent=None: json.dumps(
        value, indent=indent, ensure_ascii=False
    )
    environment.globals["raise_exception"] = raise_exception
    return environment.from_string(source)
