"""Tokens sampled among recorded choices (a grammar's few allowed tokens) are scored under the
softmax over those choices alone, packed or padded, with or without a shared prefix; a token
outside its choices is an error, and the update trains only the choice logits."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from trainer.models import load_model  # noqa: E402
from trainer.strategies.batch import TokenBatch  # noqa: E402
from trainer.strategies.logprobs import Layout, score_layout, sequence_logprobs  # noqa: E402
from trainer.strategies.torch_strategy import LossSettings, TorchStrategy  # noqa: E402

SHARED = 24


@pytest.fixture(scope="module")
def tiny():
    model, tokenizer = load_model("tiny-random", seed=0)
    return model, len(tokenizer)


def batch_with_choices(vocab: int, prefix: int, seed: int = 0):
    """Sequences with a shared prefix; each scored token has either no choices, a forced one,
    or a few that hold it."""
    rng = random.Random(seed)
    shared = [rng.randrange(3, vocab) for _ in range(prefix)]
    sequences, masks, choices = [], [], []
    for _ in range(5):
        tokens = shared + [rng.randrange(3, vocab) for _ in range(rng.randint(8, 30))]
        mask, among = [0.0] * len(tokens), [None] * len(tokens)
        for t in range(prefix + 1, len(tokens)):
            kind = rng.choice(["none", "forced", "few", "skip"])
            if kind == "skip":
                continue
            mask[t] = 1.0
            if kind == "forced":
                among[t] = (tokens[t],)
            elif kind == "few":
                others = {rng.randrange(3, vocab) for _ in range(4)} - {tokens[t]}
                among[t] = tuple(sorted({tokens[t], *others}))
        sequences.append(tokens)
        masks.append(torch.tensor(mask))
        choices.append(among)
    return sequences, masks, choices


def expected_scores(model, tokens, mask, among):
    with torch.no_grad():
        logits = model(torch.tensor([tokens])).logits[0].float()
    logprobs, entropies = torch.zeros(len(tokens)), torch.zeros(len(tokens))
    for t in range(1, len(tokens)):
        if not mask[t]:
            continue
        z = logits[t - 1] if among[t] is None else logits[t - 1, list(among[t])]
        target = tokens[t] if among[t] is None else among[t].index(tokens[t])
        logprobs[t] = z.log_softmax(-1)[target]
        entropies[t] = -(z.softmax(-1) * z.log_softmax(-1)).sum()
    return logprobs, entropies


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("prefix", [0, SHARED])
def test_a_token_with_choices_is_scored_among_them_and_the_rest_over_the_vocabulary(
    tiny, packed, prefix
):
    model, vocab = tiny
    sequences, masks, choices = batch_with_choices(vocab, prefix)
    layout = Layout.of(sequences, 0, packed=packed, select=masks if prefix else None)
    with torch.no_grad():
        scores = score_layout(model, layout, masks, choices=choices, with_entropy=True)
    logprobs, entropy = layout.rows(scores.logprobs), layout.rows(scores.entropy)
    for row, (tokens, mask, among) in enumerate(zip(sequences, masks, choices, strict=True)):
        want_logprobs, want_entropy = expected_scores(model, tokens, mask, among)
        n = len(tokens)
        torch.testing.assert_close(logprobs[row, :n] * mask, want_logprobs, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(entropy[row, :n] * mask, want_entropy, atol=1e-4, rtol=1e-4)
        forced = [t for t in range(n) if mask[t] and among[t] is not None and len(among[t]) == 1]
        assert forced and all(logprobs[row, t] == 0.0 for t in forced)

    # the no-grad path the trainer recomputes old log-probs with agrees
    recomputed, _ = sequence_logprobs(
        model, sequences, masks, pad_id=0, token_budget=120, packing=packed, choices=choices
    )
    for row, (tokens, mask, among) in enumerate(zip(sequences, masks, choices, strict=True)):
        want, _ = expected_scores(model, tokens, mask, among)
        torch.testing.assert_close(recomputed[row] * mask, want, atol=1e-4, rtol=1e-4)


def test_a_token_outside_its_choices_is_an_error_that_says_so(tiny):
    model, _ = tiny
    tokens = [5, 6, 7, 8]
    layout = Layout.of([tokens], 0, packed=False)
    with pytest.raises(ValueError, match="not among the choices it was sampled from"):
        score_layout(
            model,
            layout,
            [torch.tensor([0.0, 0.0, 1.0, 0.0])],
            choices=[[None, None, (9, 10), None]],
        )


def test_an_update_on_chosen_tokens_moves_only_the_logits_of_their_choices(tiny):
    model, vocab = tiny
    untied = load_model("tiny-random", seed=0)[0]
    head = untied.get_output_embeddings()
    if head.weight is untied.get_input_embeddings().weight:  # tied: give the head its own
        head.weight = torch.nn.Parameter(head.weight.detach().clone())
    strategy = TorchStrategy(untied, pad_id=0, loss=LossSettings(), lr=1e-2, grad_clip=None)
    before = head.weight.detach().clone()
    sequences, masks, choices = batch_with_choices(vocab, prefix=0, seed=2)
    # every scored token chosen among a few (no whole-vocabulary ones)
    for among, mask in zip(choices, masks, strict=True):
        for t, c in enumerate(among):
            if mask[t] and c is None:
                mask[t] = 0.0
    batch = TokenBatch(
        token_ids=sequences,
        loss_mask=masks,
        advantages=[torch.randn(len(s)) for s in sequences],
        old_logprobs=[torch.zeros(len(s)) for s in sequences],
        choices=choices,
    )
    strategy.train_step(batch)
    moved = ((head.weight.detach() - before).abs().sum(-1) > 0).nonzero().flatten().tolist()
    chosen = {
        token
        for among, mask in zip(choices, masks, strict=True)
        for t, c in enumerate(among)
        if mask[t] and c is not None and len(c) > 1
        for token in c
    }
    assert moved and set(moved) <= chosen
