"""``TorchStrategy``: policy updates in one process with plain torch (CPU or one GPU).

One ``train_step`` is one optimiser step over a ``TokenBatch``, accumulated over micro-batches
cut by a token budget (each micro-batch packed into one row where the model allows it, else
padded; see ``trainer.strategies.packing``). Each micro-batch's loss is weighted by its share of
the batch (tokens for ``token-mean``, sequences for the ``seq-mean-*`` modes), so the
accumulated gradient equals the gradient of the loss over the whole batch:

    loss = policy_loss + kl_coef * KL(pi || ref) - entropy_coef * H(pi) + value_coef * value_loss
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from trainer.algorithms import aggregate_loss, kl_penalty, ppo_policy_loss, value_loss
from trainer.config import LoraConfig
from trainer.strategies.base import StrategyRequest
from trainer.strategies.batch import TokenBatch, micro_batches, pad_values
from trainer.strategies.frozen_layers import freeze_all_but_last_layers
from trainer.strategies.logprobs import Choices, Layout, score_layout, sequence_logprobs
from trainer.strategies.packing import checkpoint_layers, supports_packing


@dataclass(frozen=True)
class LossSettings:
    """The terms of the policy loss (see ``trainer.algorithms``)."""

    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = 3.0
    aggregation: str = "token-mean"
    kl_coef: float = 0.0
    kl_estimator: str = "k3"
    kl_in_loss: bool = True
    entropy_coef: float = 0.0
    value_coef: float = 0.5
    value_clip: float | None = 0.2
    temperature: float = 1.0
    # the token ids constrained decoding samples among (algorithm.score_actions_only): replies
    # are scored under the softmax over these alone; None: over the whole vocabulary
    vocabulary: tuple[int, ...] | None = None
    # with a batch's behaviour log-probs (decoupled PPO): the most an importance weight may be
    # (TIS); None leaves them untruncated
    importance_cap: float | None = None


class TorchStrategy:
    """Trains a causal LM (optionally through LoRA, optionally with a value head).

    Args:
        model: the policy (trained in place).
        pad_id: token id used for padding.
        loss: the loss terms.
        lr, weight_decay, betas: AdamW settings.
        grad_clip: max global gradient norm (``None``: no clipping).
        micro_batch_tokens: tokens per forward/backward pass (padding included, if padded).
        lora: train low-rank adapters instead of every weight.
        value_head: add a linear value head on the last hidden state (PPO with a critic).
        reference: keep a frozen reference policy for the KL term.
        packing: pack each micro-batch's sequences into one row where the model supports it
            (same results as padding, without computing padding); ``False`` always pads.
        share_prefix: packed, hold a beginning the micro-batch's sequences share (the
            instruction each turn repeats) once in the row (same results, fewer tokens).
        activation_checkpointing: keep only each decoder layer's input in the forward pass and
            recompute the layer in the backward pass (less memory, about a third more time).
        trainable_layers: train only the last N decoder layers and the final norm (see
            :mod:`trainer.strategies.frozen_layers`); ``None`` trains every weight.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        pad_id: int,
        loss: LossSettings | None = None,
        lr: float = 1e-5,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        grad_clip: float | None = 1.0,
        micro_batch_tokens: int = 4096,
        lora: LoraConfig | None = None,
        value_head: bool = False,
        reference: bool = False,
        packing: bool = True,
        share_prefix: bool = True,
        activation_checkpointing: bool = False,
        trainable_layers: int | None = None,
    ):
        self.pad_id = pad_id
        self.loss = loss or LossSettings()
        self.grad_clip = grad_clip
        self.micro_batch_tokens = micro_batch_tokens
        self.lora = lora
        self._reference: nn.Module | None = None
        if reference and lora is None:
            self._reference = copy.deepcopy(model).eval().requires_grad_(False)
        if lora is not None:
            from peft import LoraConfig as PeftLoraConfig
            from peft import get_peft_model

            model = get_peft_model(
                model,
                PeftLoraConfig(
                    r=lora.r,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=list(lora.target_modules),
                    task_type="CAUSAL_LM",
                ),
            )
        if trainable_layers is not None:
            if lora is not None:
                raise ValueError("trainable_layers and lora cannot be combined: set one of them")
            freeze_all_but_last_layers(model, trainable_layers)
        self.model = model
        self.model.train()
        self.packing = packing and supports_packing(model)
        self.share_prefix = share_prefix
        self.device = next(model.parameters()).device
        self.value_head = None
        if value_head:
            self.value_head = nn.Linear(model.config.hidden_size, 1, device=self.device)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)
        if activation_checkpointing:
            checkpoint_layers(self.model)
        self._prepare()
        params = [p for _, p in self.trainable_parameters()]
        self.optimizer = self._make_optimizer(
            torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas)
        )

    #: Whether every micro-batch runs even when it carries no weight (the sharded workers
    #: subclassing this one: each forward and backward is a collective over all of them).
    collective = False

    def _prepare(self) -> None:
        """Where a subclass shards the model (after LoRA and value head, before the optimizer)."""

    def _make_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """Where a subclass wraps the optimizer (DeepSpeed)."""
        return optimizer

    def trainable_parameters(self) -> list[tuple[str, nn.Parameter]]:
        """The trained parameters by name, in the optimizer's order (the value head's named
        ``value_head.*``): the names checkpoints key the optimizer state by."""
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        if self.value_head is not None:
            named += [(f"value_head.{n}", p) for n, p in self.value_head.named_parameters()]
        return named

    # ------------------------------------------------------------------ log-probs
    def sequence_logprobs(
        self,
        sequences: list[list[int]],
        masks: list[torch.Tensor],
        *,
        with_values: bool = False,
        micro_batches_at_least: int = 0,
        choices: list[Choices | None] | None = None,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        return sequence_logprobs(
            self._scorer(),
            sequences,
            masks,
            pad_id=self.pad_id,
            token_budget=self.micro_batch_tokens,
            temperature=self.loss.temperature,
            vocabulary=self.loss.vocabulary,
            value_head=self.value_head if with_values else None,
            packing=self.packing,
            share_prefix=self.share_prefix,
            min_micro_batches=micro_batches_at_least,
            choices=choices,
        )

    def reference_logprobs(
        self,
        sequences: list[list[int]],
        masks: list[torch.Tensor],
        *,
        micro_batches_at_least: int = 0,
        choices: list[Choices | None] | None = None,
    ) -> list[torch.Tensor]:
        if self.lora is not None:  # the reference is the base model: adapters switched off
            with self.model.disable_adapter():
                return self.sequence_logprobs(
                    sequences,
                    masks,
                    micro_batches_at_least=micro_batches_at_least,
                    choices=choices,
                )[0]
        if self._reference is None:
            raise RuntimeError("this strategy keeps no reference model (reference=False)")
        return sequence_logprobs(
            self._reference,
            sequences,
            masks,
            pad_id=self.pad_id,
            token_budget=self.micro_batch_tokens,
            temperature=self.loss.temperature,
            vocabulary=self.loss.vocabulary,
            packing=self.packing,
            share_prefix=self.share_prefix,
            choices=choices,
        )[0]

    # ------------------------------------------------------------------ training
    def train_step(
        self, batch: TokenBatch, *, total: float | None = None, micro_batches_at_least: int = 0
    ) -> dict[str, float]:
        """One optimiser step on ``batch``; returns metrics.

        ``total``: what the loss is normalised by (valid tokens for ``token-mean``, sequences
        for ``seq-mean-*``), when ``batch`` is one worker's part of a larger batch: the
        workers' gradients then add up to the whole batch's. ``micro_batches_at_least``: run
        that many micro-batches, padding with weightless fillers (see :attr:`collective`).
        """
        settings = self.loss
        per_sequence = settings.aggregation != "token-mean"
        if total is None:
            total = len(batch) if per_sequence else batch.valid_tokens
        total = max(total, 1)
        sums: dict[str, float] = {}
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        parts = self._parts(batch, micro_batches_at_least)
        for index, (part, real) in enumerate(parts):
            share = (len(part) if per_sequence else part.valid_tokens) / total if real else 0.0
            if share == 0 and not self.collective:
                continue
            loss, metrics = self._micro_batch_loss(part)
            self._backward(loss * share, last=index == len(parts) - 1)
            for name, value in metrics.items():
                sums[name] = sums.get(name, 0.0) + float(value) * share
        sums["grad_norm"] = self._optimizer_step()
        sums["tokens"] = float(batch.valid_tokens)
        return sums

    def supervised_step(
        self, batch: TokenBatch, *, total: float | None = None, micro_batches_at_least: int = 0
    ) -> dict[str, float]:
        """One optimiser step of next-token cross-entropy on the masked tokens (SFT).

        loss = - sum_t mask_t log p(token_t | tokens_<t) / sum_t mask_t

        ``total`` and ``micro_batches_at_least`` as in :meth:`train_step`.
        """
        total = max(batch.valid_tokens if total is None else total, 1)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        nll_sum = 0.0
        parts = self._parts(batch, micro_batches_at_least)
        for index, (part, real) in enumerate(parts):
            layout = self._layout(part)
            logprobs = score_layout(self._scorer(), layout, part.loss_mask).logprobs
            mask = layout.place(part.loss_mask).to(self.device)
            nll = -(logprobs * mask).sum() / total * (1.0 if real else 0.0)
            self._backward(nll, last=index == len(parts) - 1)
            nll_sum += nll.item()
        grad_norm = self._optimizer_step()
        tokens = float(batch.valid_tokens)
        return {"sft/loss": nll_sum, "sft/grad_norm": grad_norm, "tokens": tokens}

    def _parts(self, batch: TokenBatch, at_least: int) -> list[tuple[TokenBatch, bool]]:
        """The micro-batches of ``batch`` (``True``: they count), then fillers up to
        ``at_least`` (``False``: their loss is multiplied by 0)."""
        parts = [(batch.select(g), True) for g in self.micro_batch_groups(batch.token_ids)]
        return parts + [(_filler(batch, self.pad_id), False)] * (at_least - len(parts))

    def micro_batch_groups(self, sequences: list[list[int]]) -> list[list[int]]:
        """How this strategy cuts ``sequences`` into micro-batches (indices)."""
        lengths = [len(s) for s in sequences]
        return list(micro_batches(lengths, self.micro_batch_tokens, packed=self.packing))

    def _layout(self, part: TokenBatch) -> Layout:
        """How ``part``'s sequences go through the model (packed, sharing a prefix, or padded)."""
        select = part.loss_mask if self.share_prefix else None
        return Layout.of(part.token_ids, self.pad_id, packed=self.packing, select=select)

    def _scorer(self) -> nn.Module:
        """What the forward passes go through (a sharded subclass's wrapped module)."""
        return self.model

    def _backward(self, loss: torch.Tensor, *, last: bool) -> None:
        loss.backward()

    def _optimizer_step(self) -> float:
        """Clips the gradients' global norm, steps the optimizer; returns the norm."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        max_norm = self.grad_clip if self.grad_clip is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        self.optimizer.step()
        return float(grad_norm)

    def _micro_batch_loss(self, part: TokenBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        settings = self.loss
        layout = self._layout(part)
        scores = score_layout(
            self._scorer(),
            layout,
            part.loss_mask,
            temperature=settings.temperature,
            vocabulary=settings.vocabulary,
            choices=part.choices,
            with_entropy=True,
            entropy_grad=bool(settings.entropy_coef),
        )
        # the loss terms see (sequences, longest) rows, whether the forward was packed or not
        length = max(layout.lengths)

        def padded(values: list[torch.Tensor]) -> torch.Tensor:
            return pad_values(values, length).to(self.device)

        mask = padded(part.loss_mask)
        advantages = padded(part.advantages)
        old_logprobs = padded(part.old_logprobs)
        logprobs = layout.rows(scores.logprobs)
        behaviour = part.behaviour_logprobs
        loss, metrics = ppo_policy_loss(
            logprobs,
            old_logprobs,
            advantages,
            mask,
            clip_low=settings.clip_low,
            clip_high=settings.clip_high,
            dual_clip=settings.dual_clip,
            aggregation=settings.aggregation,
            behaviour_logprobs=None if behaviour is None else padded(behaviour),
            importance_cap=settings.importance_cap,
        )
        metrics = {f"policy/{k}": v.detach() for k, v in metrics.items()}
        metrics["policy/loss"] = loss.detach()
        if part.ref_logprobs is not None:
            kl = kl_penalty(logprobs, padded(part.ref_logprobs), settings.kl_estimator)
            kl_value = aggregate_loss(kl, mask, settings.aggregation)
            metrics["policy/kl_to_reference"] = kl_value.detach()
            if settings.kl_in_loss and settings.kl_coef:
                loss = loss + settings.kl_coef * kl_value
        entropy_value = aggregate_loss(layout.rows(scores.entropy), mask, settings.aggregation)
        metrics["policy/entropy"] = entropy_value.detach()
        if settings.entropy_coef:
            loss = loss - settings.entropy_coef * entropy_value
        if self.value_head is not None and part.returns is not None:
            values = layout.rows(self.value_head(scores.hidden.float()).squeeze(-1))
            critic = value_loss(
                values,
                padded(part.old_values),
                padded(part.returns),
                mask,
                clip=settings.value_clip,
                aggregation=settings.aggregation,
            )
            metrics["critic/loss"] = critic.detach()
            loss = loss + settings.value_coef * critic
        metrics["loss"] = loss.detach()
        return loss, metrics

    # ------------------------------------------------------------------ weights
    def inference_state_dict(self) -> dict[str, torch.Tensor]:
        """Full weights for a generator or a save; read them, don't modify them.

        Without LoRA these are detached views of the live weights (the generator's
        ``load_state_dict`` copies them anyway); with LoRA, copies of the merged weights.
        """
        if self.lora is None:
            return {k: v.detach().cpu() for k, v in self.model.state_dict().items()}
        self.model.merge_adapter()
        try:
            merged = {}
            for name, value in self.model.get_base_model().state_dict().items():
                if "lora_" in name:
                    continue
                merged[name.replace(".base_layer.", ".")] = value.detach().cpu().clone()
        finally:
            self.model.unmerge_adapter()
        return merged

    # Full (unsharded) values of a parameter and of its AdamW state; a sharded subclass
    # gathers and scatters them (collectives: every worker calls them in the same order).
    def _full_parameter(self, parameter: nn.Parameter) -> torch.Tensor:
        return parameter.detach().cpu().clone()

    def _set_full_parameter(self, parameter: nn.Parameter, value: torch.Tensor) -> None:
        with torch.no_grad():
            parameter.copy_(value)

    def _full_optimizer_state(self, parameter: nn.Parameter) -> dict[str, torch.Tensor]:
        state = self.optimizer.state.get(parameter, {})
        return {k: v.detach().cpu().clone() for k, v in state.items()}

    def _set_full_optimizer_state(
        self, parameter: nn.Parameter, state: dict[str, torch.Tensor]
    ) -> None:
        self.optimizer.state[parameter] = {
            k: v.to(parameter.device) if k != "step" else v.clone() for k, v in state.items()
        }

    def _held(self, tensor: torch.Tensor) -> torch.Tensor:
        """The part of ``tensor`` this process holds (a sharded subclass: its shard)."""
        return tensor

    def local_bytes(self) -> dict[str, int]:
        """Bytes this process holds of parameters, of AdamW's state (a sharded worker holds
        about 1/world of one process's) and of a master copy of the weights kept apart from
        the parameters (none here: AdamW steps the parameters themselves)."""
        tensors = list(self.model.parameters())
        if self.value_head is not None:
            tensors += list(self.value_head.parameters())
        states = [v for state in self.optimizer.state.values() for k, v in state.items()]
        return {
            "parameters": sum(self._held(t).numel() * t.element_size() for t in tensors),
            "optimizer": sum(
                self._held(v).numel() * v.element_size() for v in states if v.dim() > 0
            ),
            "master_copy": 0,
        }

    def _writes_files(self) -> bool:
        """Whether this process writes the checkpoint's files (one worker of a group does)."""
        return True

    def save(self, folder: Path) -> None:
        """Writes ``model/`` (a Hugging Face folder, LoRA merged) and ``strategy.pt``.

        ``strategy.pt`` holds the AdamW state keyed by parameter name (so that any strategy,
        sharded over any number of workers, can resume it), the value head and, with LoRA,
        the adapters; full weights live only in ``model/``.
        """
        folder = Path(folder)
        weights = self.inference_state_dict()
        optimizer = self.optimizer_state_by_name()
        trained = {  # the adapters and the value head: the other weights are in model/
            name: self._full_parameter(p)
            for name, p in self.trainable_parameters()
            if "lora_" in name or name.startswith("value_head.")
        }
        if not self._writes_files():
            return
        self._hf_model().save_pretrained(folder / "model", state_dict=weights)
        torch.save(
            {
                "optimizer_by_name": optimizer,
                "adapters": {k: v for k, v in trained.items() if "lora_" in k} or None,
                "value_head": {
                    k.removeprefix("value_head."): v
                    for k, v in trained.items()
                    if k.startswith("value_head.")
                }
                or None,
            },
            folder / "strategy.pt",
        )

    def _hf_model(self) -> nn.Module:
        """The Hugging Face model whose ``save_pretrained`` writes ``model/``."""
        return self.model.get_base_model() if self.lora is not None else self.model

    def optimizer_state_by_name(self) -> dict[str, dict[str, torch.Tensor]]:
        """Full AdamW state of every trained parameter, by the name checkpoints key it by
        (empty before the first step)."""
        return {
            name: self._full_optimizer_state(parameter)
            for name, parameter in self.trainable_parameters()
        }

    def load(self, folder: Path) -> None:
        """Restores what ``save`` wrote (by any strategy): weights, value head, optimizer."""
        folder = Path(folder)
        state = torch.load(folder / "strategy.pt", weights_only=False)
        if self.lora is not None:
            saved = state["adapters"] or {}
            for name, parameter in self.trainable_parameters():
                if name in saved:
                    self._set_full_parameter(parameter, saved[name])
        else:
            self._load_model_folder(folder / "model")
        if self.value_head is not None and state.get("value_head") is not None:
            for name, parameter in self.value_head.named_parameters():
                self._set_full_parameter(parameter, state["value_head"][name])
        self._load_optimizer_state(state, folder)

    def _load_model_folder(self, folder: Path) -> None:
        load_model_folder_weights(self.model, folder)

    def _load_optimizer_state(self, state: dict, folder: Path) -> None:
        if "optimizer_by_name" not in state:  # written before checkpoints keyed it by name
            self.optimizer.load_state_dict(state["optimizer"])
            return
        self._set_optimizer_state_by_name(state["optimizer_by_name"], folder)

    def _set_optimizer_state_by_name(self, saved: dict[str, dict], folder: Path) -> None:
        """Loads what :meth:`optimizer_state_by_name` returned (``folder``: for errors)."""
        own = dict(self.trainable_parameters())
        foreign = sorted(set(saved) - set(own))
        if foreign:
            raise ValueError(
                f"{folder} holds the optimizer of other parameters (e.g. {foreign[0]!r})"
            )
        for name, parameter in own.items():
            if saved.get(name):
                self._set_full_optimizer_state(parameter, saved[name])

    def load_optimizer_moments(self, folder: Path) -> None:
        """Starts the optimizer from the moments in ``folder/strategy.pt``, keeping this
        strategy's lr, betas and weight decay (the weights are not touched).

        Raises:
            ValueError: the checkpoint's optimizer is over other parameters.
        """
        path = Path(folder) / "strategy.pt"
        if not path.exists():
            raise FileNotFoundError(f"optim.moments_from: no {path} (a checkpoint folder has one)")
        saved = torch.load(path, weights_only=False)
        settings = [
            {k: v for k, v in group.items() if k != "params"}
            for group in self.optimizer.param_groups
        ]
        try:
            self._load_optimizer_state(saved, path.parent)
        except ValueError as error:
            raise ValueError(f"optim.moments_from: {error}") from None
        for group, own in zip(self.optimizer.param_groups, settings, strict=True):
            group.update(own)

    def close(self) -> None:
        """Nothing to release: the policy lives in this process as long as its owner."""


def build_torch_strategy(request: StrategyRequest) -> TorchStrategy:
    """The registry's builder of ``train.strategy=torch``: a :class:`TorchStrategy` around the
    policy loaded in this process."""
    if request.model is None:
        raise ValueError("train.strategy=torch trains the policy of this process: load one")
    return TorchStrategy(request.model, **request.options)


def _filler(batch: TokenBatch, pad_id: int) -> TokenBatch:
    """A two-token micro-batch shaped like ``batch``'s parts, scoring one token so every
    weight takes part; its loss is multiplied by 0, so it changes no gradient and no metric
    (it only keeps sharded workers in step)."""
    zeros = [torch.zeros(2)]
    return TokenBatch(
        token_ids=[[pad_id, pad_id]],
        loss_mask=[torch.tensor([0.0, 1.0])],
        advantages=zeros,
        old_logprobs=zeros,
        ref_logprobs=None if batch.ref_logprobs is None else zeros,
        old_values=None if batch.old_values is None else zeros,
        returns=None if batch.returns is None else zeros,
    )


def read_model_folder(folder: Path) -> dict[str, torch.Tensor]:
    """The safetensors weights of a Hugging Face folder, by name."""
    from safetensors.torch import load_file

    weights: dict[str, torch.Tensor] = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        weights.update(load_file(file))
    return weights


def load_model_folder_weights(model: nn.Module, folder: Path) -> None:
    """Copies the safetensors weights of a Hugging Face folder into ``model`` in place."""
    weights = read_model_folder(folder)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    if unexpected or set(missing) - tied:
        raise ValueError(
            f"checkpoint {folder} does not match the model: missing {sorted(set(missing) - tied)}, "
            f"unexpected {sorted(unexpected)}"
        )
