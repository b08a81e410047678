"""Per-token log-probs (and entropies, values) of sequences under a causal LM.

Only sampled tokens are trained on, so logits are computed only where they are needed: the
decoder runs over the whole sequence, then the LM head runs on the hidden states that predict a
selected token. With a 49k-token vocabulary and a reply that is a small part of a long prompt,
this saves most of the time and memory of a training step.

Where the model allows it, the sequences of a micro-batch are packed into one row instead of
padded (:class:`Layout`, ``trainer.strategies.packing``): no compute goes to padding, and every
sequence's results are the same as unpadded. Packed sequences that begin alike (the
instruction each turn repeats) hold that beginning once in the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from trainer.strategies.batch import micro_batches, pad, pad_values
from trainer.strategies.packing import (
    base_config,
    pack,
    pack_sharing_prefix,
    packed_attention,
    packed_positions,
    row_segments,
    shared_prefix_length,
    supports_packing,
)

#: Rows of logits whose entropy is computed at once when it needs no gradient (bounds memory).
_ENTROPY_CHUNK_ROWS = 256


@dataclass
class TokenScores:
    """Per-token results aligned with ``input_ids`` (0 where a token was not selected)."""

    logprobs: torch.Tensor
    entropy: torch.Tensor | None
    hidden: torch.Tensor


@dataclass
class Layout:
    """How one micro-batch of sequences is fed to the model: padded rows, or one packed row.

    Padded: ``input_ids`` is ``(sequences, longest)`` with an ``attention_mask``. Packed:
    ``input_ids`` is ``(1, sum(lengths))``, ``attention_mask`` is ``None`` and ``packed`` is
    true (see ``trainer.strategies.packing``). Packed with ``select`` given, a beginning all
    sequences share and nothing selected lies in (``shared_prefix_length``) is held once:
    ``prefix`` tokens, then each sequence's rest. Per-token values go in with :meth:`place`
    and come out as ``(sequences, longest)`` rows with :meth:`rows`, the same for all layouts.

    Example:
        >>> layout = Layout.of([[5, 6, 7], [8, 9]], pad_id=0, packed=True)
        >>> layout.input_ids, layout.attention_mask
        (tensor([[5, 6, 7, 8, 9]]), None)
        >>> layout.rows(layout.place([torch.tensor([0.0, 1, 2]), torch.tensor([0.0, 3])]))
        tensor([[0., 1., 2.],
                [0., 3., 0.]])
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    lengths: list[int]
    prefix: int = 0  # packed: leading tokens every sequence shares, held once in the row

    @property
    def packed(self) -> bool:
        return self.attention_mask is None

    @classmethod
    def of(
        cls,
        sequences: list[list[int]],
        pad_id: int,
        *,
        packed: bool,
        select: list[torch.Tensor] | None = None,
    ) -> Layout:
        lengths = [len(s) for s in sequences]
        if packed:
            prefix = 0 if select is None else shared_prefix_length(sequences, select)
            if prefix:
                return cls(pack_sharing_prefix(sequences, prefix), None, lengths, prefix)
            return cls(pack(sequences)[0], None, lengths)
        input_ids, attention_mask = pad(sequences, pad_id)
        return cls(input_ids, attention_mask, lengths)

    def place(self, values: list[torch.Tensor]) -> torch.Tensor:
        """Per-sequence 1-D float values laid out like ``input_ids`` (0 on padding; on a shared
        prefix, the first sequence's values)."""
        if not self.packed:
            return pad_values(values, self.input_ids.shape[1])
        flat = [v.to(torch.float32).reshape(-1) for v in values]
        if self.prefix:
            flat = [flat[0][: self.prefix], *(v[self.prefix :] for v in flat)]
        return torch.cat(flat)[None]

    def rows(self, values: torch.Tensor) -> torch.Tensor:
        """Per-token values laid out like ``input_ids`` as ``(sequences, longest)`` rows."""
        if not self.packed:
            return values
        pieces = list(values[0].split(row_segments(self.lengths, self.prefix)))
        if self.prefix:
            shared = pieces.pop(0)
            pieces = [torch.cat([shared, rest]) for rest in pieces]
        return nn.utils.rnn.pad_sequence(pieces, batch_first=True)


def _decoder_and_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # LoRA (peft)
    return base.get_decoder(), base.get_output_embeddings()


class SelectedLogits(nn.Module):
    """A causal LM's decoder, then its LM head only at the selected positions, in one forward.

    One module, so that FSDP2 and DeepSpeed, which gather a sharded module's weights around
    its ``forward``, see the decoder and the head (tied to the embeddings) in one call.

    Args:
        model: a causal LM (or a peft model around one).
        value_head: an optional module mapping hidden states to values (PPO's critic), kept
            here so that it is sharded and saved with the policy.
    """

    def __init__(self, model: nn.Module, value_head: nn.Module | None = None):
        super().__init__()
        self.model = model
        self.value_head = value_head
        self.config = base_config(model)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_ids: torch.Tensor | None,
        rows: torch.Tensor,
        cols: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(hidden states of every position, logits at (rows, cols))``."""
        decoder, head = _decoder_and_head(self.model)
        hidden = decoder(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids
        ).last_hidden_state
        return hidden, head(hidden[rows, cols])


def _scorer_of(model: nn.Module) -> tuple[nn.Module, SelectedLogits]:
    """What to call for a forward, and the :class:`SelectedLogits` it runs: ``model`` itself,
    an engine around one (DeepSpeed's forward must go through its engine), or a new one
    around a causal LM."""
    if isinstance(model, SelectedLogits):
        return model, model
    inner = getattr(model, "module", None)
    if isinstance(inner, SelectedLogits):
        return model, inner
    wrapped = SelectedLogits(model)
    return wrapped, wrapped


def _entropy_no_grad(logits: torch.Tensor, log_z: torch.Tensor) -> torch.Tensor:
    """``H = log Z - sum_v p_v z_v`` per row, without a gradient, a few rows at a time."""
    with torch.no_grad():
        parts = []
        for z, lz in zip(
            logits.detach().split(_ENTROPY_CHUNK_ROWS),
            log_z.detach().split(_ENTROPY_CHUNK_ROWS),
            strict=True,
        ):
            p = torch.exp(z - lz[:, None])
            parts.append(lz - (p * z).sum(-1))
        return torch.cat(parts) if parts else log_z.detach().clone()


def score_tokens(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    select: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = True,
    packed_lengths: list[int] | None = None,
    shared_prefix: int = 0,
    vocabulary: Sequence[int] | None = None,
    choice_ids: torch.Tensor | None = None,
    choice_table: torch.Tensor | None = None,
) -> TokenScores:
    """Log-probs of the selected tokens under ``softmax(logits / temperature)``.

        logprobs[b, t] = log softmax(head(h[b, t-1]) / T)[input_ids[b, t]]   where select[b, t]

    ``entropy[b, t]`` is the entropy of that same distribution (the one token ``t`` was drawn
    from); with ``entropy_grad=False`` it is computed without a gradient (a metric only), which
    saves the memory of the probabilities. Gradients flow to the log-probs when called with
    grad enabled. Inputs may live on the CPU; the results live on the model's device.

    ``packed_lengths``: ``input_ids`` is one row of sequences of these lengths, concatenated
    (``attention_mask`` is ``None``; see ``trainer.strategies.packing``). The first token of
    each sequence is never selected (nothing in its own sequence predicts it).
    ``shared_prefix``: the row holds these leading tokens of every sequence once, then each
    sequence's rest (``Layout.prefix``); nothing in the prefix, nor a rest's first token, is
    selected.

    ``vocabulary``: the only token ids the sampler could draw (constrained decoding); the
    softmax, and the entropy, are then over those logits alone, the distribution each token
    was drawn from. A selected token outside it is an error.

    ``choice_ids`` and ``choice_table``: per token, like ``input_ids``, the row of
    ``choice_table`` (token ids, padded with -1) holding what that token was sampled among
    (``SamplingParams.record_choices``); row 0 is the whole vocabulary. The softmax, and the
    entropy, of such a token are over its choices alone:

        logprobs[b, t] = z[x_t] - logsumexp(z[choices_t]),   z = head(h[b, t-1]) / T
    """
    scorer, selected = _scorer_of(model)
    device = selected.device
    input_ids, select = input_ids.to(device), select.to(device)
    position_ids = None
    if packed_lengths is not None:
        segments = row_segments(packed_lengths, shared_prefix)
        starts = torch.tensor([0, *segments[:-1]], device=device).cumsum(0)
        select = select.index_fill(1, starts, 0)
        position_ids = packed_positions(packed_lengths, device, prefix=shared_prefix)
        attention_mask = None
    else:
        attention_mask = attention_mask.to(device)
    rows, cols = torch.nonzero(select[:, 1:] > 0, as_tuple=True)  # position cols predicts cols+1
    packing = (
        packed_attention(selected.model, packed_lengths, shared_prefix)
        if packed_lengths
        else nullcontext()
    )
    with packing:
        hidden, logits = scorer(input_ids, attention_mask, position_ids, rows, cols)
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    targets = input_ids[rows, cols + 1]
    if vocabulary is not None:
        allowed = torch.as_tensor(list(vocabulary), device=device)
        logits = logits[:, allowed]
        index_of = torch.full((int(allowed.max()) + 2,), -1, dtype=torch.long, device=device)
        index_of[allowed] = torch.arange(len(allowed), device=device)
        targets = index_of[targets.clamp(max=len(index_of) - 1)]
        if bool((targets < 0).any()):
            raise ValueError("a scored token is not in the vocabulary it was sampled from")
    positions = (rows, cols + 1)
    options = {"with_entropy": with_entropy, "entropy_grad": entropy_grad}
    if choice_ids is None or choice_table is None:
        picked, token_entropy = _over_vocabulary(logits, targets, **options)
    else:  # each row over the whole vocabulary or over its choices, never both
        set_of_row = choice_ids.to(device)[positions].long()
        free = (set_of_row == 0).nonzero().flatten()
        chosen = (set_of_row > 0).nonzero().flatten()
        members = choice_table.to(device)[set_of_row[chosen]]
        parts = [
            (free, _over_vocabulary(logits[free], targets[free], **options)),
            (chosen, _among_choices(logits[chosen], targets[chosen], members, **options)),
        ]
        picked = logits.new_zeros(len(targets))
        token_entropy = logits.new_zeros(len(targets)) if with_entropy else None
        for where, (part_picked, part_entropy) in parts:
            picked = picked.index_put((where,), part_picked)
            if token_entropy is not None:
                token_entropy = token_entropy.index_put((where,), part_entropy)
    logprobs = torch.zeros(input_ids.shape, device=device).index_put(positions, picked)
    entropy = None
    if token_entropy is not None:
        entropy = torch.zeros(input_ids.shape, device=device).index_put(positions, token_entropy)
    return TokenScores(logprobs, entropy, hidden)


def _over_vocabulary(
    logits: torch.Tensor, targets: torch.Tensor, *, with_entropy: bool, entropy_grad: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Each row's target log-prob, and entropy, under the softmax over all of its logits."""
    log_z = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, targets[:, None]).squeeze(-1) - log_z
    if not with_entropy:
        return picked, None
    if entropy_grad:  # H = log Z - sum_v p_v z_v, as _entropy_no_grad computes it
        probs = torch.exp(logits - log_z[:, None])
        return picked, log_z - (probs * logits).sum(-1)
    return picked, _entropy_no_grad(logits, log_z)


def _among_choices(
    logits: torch.Tensor,
    targets: torch.Tensor,
    members: torch.Tensor,
    *,
    with_entropy: bool,
    entropy_grad: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Each row's target log-prob, and entropy, under the softmax over its choices alone
    (``members``: a row of token ids each, -1 past the row's last choice)."""
    outside = members < 0
    sub = logits.gather(-1, members.clamp(min=0)).masked_fill(outside, float("-inf"))
    hits = members == targets[:, None]
    if not bool(hits.any(-1).all()):
        raise ValueError("a scored token is not among the choices it was sampled from")
    log_z = torch.logsumexp(sub, dim=-1)
    picked = sub.masked_fill(~hits, 0.0).sum(-1) - log_z
    if not with_entropy:
        return picked, None
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
        probs = torch.exp(sub - log_z[:, None])
        return picked, log_z - (probs * sub.masked_fill(outside, 0.0)).sum(-1)


Choices = Sequence[tuple[int, ...] | None]
"""What each token of a sequence was sampled among (``Sample.choices``)."""


def choice_layout(
    layout: Layout, choices: Sequence[Choices | None]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(choice_ids, choice_table)`` for :func:`score_tokens` from each sequence's choices
    (``None``: its tokens are scored over the whole vocabulary).

    Example:
        >>> layout = Layout.of([[5, 6, 7], [5, 8]], pad_id=0, packed=False)
        >>> ids, table = choice_layout(layout, [[None, (6, 9), (7,)], None])
        >>> ids.tolist(), table.tolist()
        ([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]], [[-1, -1], [6, 9], [7, -1]])
    """
    rows: dict[tuple[int, ...], int] = {}
    ids = []
    for sequence, length in zip(choices, layout.lengths, strict=True):
        if sequence is None:
            ids.append(torch.zeros(length))
            continue
        row_of = [0 if c is None else rows.setdefault(c, len(rows) + 1) for c in sequence]
        ids.append(torch.tensor(row_of, dtype=torch.float32))
    table = torch.full((len(rows) + 1, max(map(len, rows), default=1)), -1, dtype=torch.long)
    for among, row in rows.items():
        table[row, : len(among)] = torch.tensor(among)
    return layout.place(ids), table


def score_layout(
    model: nn.Module,
    layout: Layout,
    select: list[torch.Tensor],
    *,
    choices: Sequence[Choices | None] | None = None,
    **options,
) -> TokenScores:
    """:func:`score_tokens` on a :class:`Layout`; ``select`` is per sequence, and so are
    ``choices`` (see :func:`choice_layout`).

    The results stay in the layout (map per-token ones with ``layout.rows``).
    """
    if choices is not None and any(c is not None for c in choices):
        options["choice_ids"], options["choice_table"] = choice_layout(layout, choices)
    return score_tokens(
        model,
        layout.input_ids,
        layout.attention_mask,
        layout.place(select),
        packed_lengths=layout.lengths if layout.packed else None,
        shared_prefix=layout.prefix,
        **options,
    )


@torch.no_grad()
def sequence_logprobs(
    model: nn.Module,
    sequences: list[list[int]],
    masks: list[torch.Tensor],
    *,
    pad_id: int,
    token_budget: int,
    temperature: float = 1.0,
    value_head: nn.Module | None = None,
    packing: bool = True,
    share_prefix: bool = True,
    min_micro_batches: int = 0,
    vocabulary: Sequence[int] | None = None,
    choices: Sequence[Choices | None] | None = None,
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Log-probs of the masked tokens of every sequence (and values, with a value head).

    ``packing``: pack each micro-batch into one row where the model supports it
    (:func:`~trainer.strategies.packing.supports_packing`); the results are the same.
    ``share_prefix``: packed, hold a beginning a micro-batch's sequences share once in its row
    (:class:`Layout`).
    ``vocabulary``: see :func:`score_tokens`; ``choices``: see :func:`choice_layout`.
    ``min_micro_batches``: run at least this many forward passes, the extra ones on a
    two-token filler whose results are dropped (sharded workers must each run as many
    forwards as the others: every forward gathers weights from all of them).
    """
    packed = packing and supports_packing(_scorer_of(model)[1])
    logprobs: list[torch.Tensor | None] = [None] * len(sequences)
    values: list[torch.Tensor | None] | None = (
        None if value_head is None else [None] * len(sequences)
    )
    was_training = model.training
    model.eval()
    try:
        groups = list(micro_batches([len(s) for s in sequences], token_budget, packed=packed))
        for _ in range(min_micro_batches - len(groups)):
            filler = Layout.of([[pad_id, pad_id]], pad_id, packed=packed)
            scores = score_layout(model, filler, [torch.tensor([0.0, 1.0])])
            if value_head is not None:
                value_head(scores.hidden.float())
        for group in groups:
            group_masks = [masks[i] for i in group]
            layout = Layout.of(
                [sequences[i] for i in group],
                pad_id,
                packed=packed,
                select=group_masks if share_prefix else None,
            )
            scores = score_layout(
                model,
                layout,
                group_masks,
                temperature=temperature,
                vocabulary=vocabulary,
                choices=None if choices is None else [choices[i] for i in group],
            )
            group_logprobs = layout.rows(scores.logprobs)
            group_values = None
            if value_head is not None:
                group_values = layout.rows(value_head(scores.hidden.float()).squeeze(-1))
            for row, index in enumerate(group):
                n = len(sequences[index])
                logprobs[index] = group_logprobs[row, :n].cpu()
                if values is not None:
                    values[index] = group_values[row, :n].cpu()
    finally:
        model.train(was_training)
    return logprobs, values
