"""``TokenBatch``: what one policy update trains on, and how it is cut into micro-batches.

Sequences stay unpadded until a micro-batch is built; micro-batches are filled up to a token
budget, longest sequences first: padded length x rows, so padding stays small, or, when the
sequences are packed into one row, the sum of their lengths.

Every per-token field is aligned with ``token_ids``: entry ``t`` concerns token ``t`` (its
log-prob is ``log p(token_t | tokens_<t)``; entry 0 is always masked out).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch


@dataclass
class TokenBatch:
    """Sequences and their per-token training signals (1-D float tensors, one per sequence)."""

    token_ids: list[list[int]]
    loss_mask: list[torch.Tensor]
    advantages: list[torch.Tensor]
    old_logprobs: list[torch.Tensor]
    ref_logprobs: list[torch.Tensor] | None = None
    old_values: list[torch.Tensor] | None = None
    returns: list[torch.Tensor] | None = None
    # what each token was sampled among, per sequence (Sample.choices), where recorded
    choices: list[list[tuple[int, ...] | None] | None] | None = None
    # the log-probs of the policy that sampled each token, when old_logprobs are another
    # policy's (decoupled PPO: old_logprobs are then the weights' before the update)
    behaviour_logprobs: list[torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.token_ids)

    def select(self, indices: list[int]) -> TokenBatch:
        """The sub-batch of the given sequences."""

        def pick(values: list | None) -> list | None:
            return None if values is None else [values[i] for i in indices]

        return TokenBatch(
            token_ids=pick(self.token_ids),
            loss_mask=pick(self.loss_mask),
            advantages=pick(self.advantages),
            old_logprobs=pick(self.old_logprobs),
            ref_logprobs=pick(self.ref_logprobs),
            old_values=pick(self.old_values),
            returns=pick(self.returns),
            choices=pick(self.choices),
            behaviour_logprobs=pick(self.behaviour_logprobs),
        )

    @property
    def valid_tokens(self) -> int:
        return int(sum(float(m.sum()) for m in self.loss_mask))


def micro_batches(
    lengths: list[int], token_budget: int, *, packed: bool = False
) -> Iterator[list[int]]:
    """Groups sequence indices, longest first, so each group's tokens fit the budget.

    Padded (the default), a group costs ``rows x longest`` tokens; ``packed`` (sequences
    concatenated into one row, see ``trainer.strategies.packing``), ``sum(lengths)``. A sequence
    longer than the budget gets a group of its own. Groups come costliest first: the memory the
    first one frees is then reused by the smaller ones after it, where a larger group after a
    smaller one needs fresh memory (a SmolLM2-135M update on the CPU peaked at 2.9 GB instead of
    3.6 GB packed, 3.1 GB instead of 3.3 GB padded).

    Example:
        >>> list(micro_batches([100, 300, 100, 100], 600))  # 2 x 300 fit, 3 x 300 do not
        [[1, 0], [2, 3]]
        >>> list(micro_batches([100, 300, 100, 100], 600, packed=True))  # 300 + 3 x 100
        [[1, 0, 2, 3]]
        >>> list(micro_batches([300, 250, 100], 400, packed=True))  # 350 tokens, then 300
        [[1, 2], [0]]
    """

    def cost(group: list[int]) -> int:
        sizes = [lengths[i] for i in group]
        return sum(sizes) if packed else len(sizes) * max(sizes)

    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: list[list[int]] = []
    for index in order:
        if not groups or cost([*groups[-1], index]) > token_budget:
            groups.append([])
        groups[-1].append(index)
    groups.sort(key=cost, reverse=True)  # stable: equal costs keep their order
    yield from groups


def pad(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pads token ids; returns ``(input_ids, attention_mask)``."""
    longest = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), longest), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids, mask


def pad_values(values: list[torch.Tensor], length: int) -> torch.Tensor:
    """Right-pads 1-D tensors with zeros into a ``(rows, length)`` tensor."""
    out = torch.zeros((len(values), length), dtype=torch.float32)
    for row, value in enumerate(values):
        out[row, : value.numel()] = value
    return out
