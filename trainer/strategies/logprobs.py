"""Per-token log-probs (and entropies, values) of sequences under a causal LM.

Only sampled tokens are trained on, so logits are computed only where they are needed: the
decoder runs over the whole sequence, then the LM head runs on the hidden states that predict a
selected token. With a 49k-token vocabulary and a reply that is a small part of a long prompt,
this saves most of the time and memory of a training step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from trainer.batch import micro_batches, pad, pad_values


@dataclass
class TokenScores:
    """Per-token results aligned with ``input_ids`` (0 where a token was not selected)."""

    logprobs: torch.Tensor
    entropy: torch.Tensor | None
    hidden: torch.Tensor


def _decoder_and_head(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # LoRA (peft)
    return base.get_decoder(), base.get_output_embeddings()


def score_tokens(
    model: nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    select: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
) -> TokenScores:
    """Log-probs of the selected tokens under ``softmax(logits / temperature)``.

        logprobs[b, t] = log softmax(head(h[b, t-1]) / T)[input_ids[b, t]]   where select[b, t]

    ``entropy[b, t]`` is the entropy of that same distribution (the one token ``t`` was drawn
    from). Gradients flow when called with grad enabled. Inputs may live on the CPU; the
    results live on the model's device.
    """
    decoder, head = _decoder_and_head(model)
    device = head.weight.device
    input_ids, attention_mask, select = (t.to(device) for t in (input_ids, attention_mask, select))
    hidden = decoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    rows, cols = torch.nonzero(select[:, 1:] > 0, as_tuple=True)  # position cols predicts cols+1
    logits = head(hidden[rows, cols]).float() / temperature
    log_z = torch.logsumexp(logits, dim=-1)
    targets = input_ids[rows, cols + 1]
    picked = logits.gather(-1, targets[:, None]).squeeze(-1) - log_z
    positions = (rows, cols + 1)
    logprobs = torch.zeros(input_ids.shape, device=device).index_put(positions, picked)
    entropy = None
    if with_entropy:
        probs = torch.softmax(logits, dim=-1)
        token_entropy = log_z - (probs * logits).sum(-1)
        entropy = torch.zeros(input_ids.shape, device=device).index_put(positions, token_entropy)
    return TokenScores(logprobs, entropy, hidden)


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
) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """Log-probs of the masked tokens of every sequence (and values, with a value head)."""
    logprobs: list[torch.Tensor | None] = [None] * len(sequences)
    values: list[torch.Tensor | None] | None = (
        None if value_head is None else [None] * len(sequences)
    )
    was_training = model.training
    model.eval()
    try:
        for group in micro_batches([len(s) for s in sequences], token_budget):
            input_ids, attention_mask = pad([sequences[i] for i in group], pad_id)
            select = pad_values([masks[i] for i in group], input_ids.shape[1])
            scores = score_tokens(model, input_ids, attention_mask, select, temperature=temperature)
            group_values = None
            if value_head is not None:
                group_values = value_head(scores.hidden.float()).squeeze(-1)
            for row, index in enumerate(group):
                n = len(sequences[index])
                logprobs[index] = scores.logprobs[row, :n].cpu()
                if values is not None:
                    values[index] = group_values[row, :n].cpu()
    finally:
        model.train(was_training)
    return logprobs, values
