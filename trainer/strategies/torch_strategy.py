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
from trainer.batch import TokenBatch, micro_batches, pad_values
from trainer.config import LoraConfig
from trainer.strategies.logprobs import Layout, score_layout, sequence_logprobs
from trainer.strategies.packing import supports_packing


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
        self.model = model
        self.model.train()
        self.packing = packing and supports_packing(model)
        self.device = next(model.parameters()).device
        self.value_head = None
        if value_head:
            self.value_head = nn.Linear(model.config.hidden_size, 1, device=self.device)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)
        params = [p for p in self.model.parameters() if p.requires_grad]
        if self.value_head is not None:
            params += list(self.value_head.parameters())
        self.optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas)

    # ------------------------------------------------------------------ log-probs
    def sequence_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor], *, with_values: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        return sequence_logprobs(
            self.model,
            sequences,
            masks,
            pad_id=self.pad_id,
            token_budget=self.micro_batch_tokens,
            temperature=self.loss.temperature,
            value_head=self.value_head if with_values else None,
            packing=self.packing,
        )

    def reference_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        if self.lora is not None:  # the reference is the base model: adapters switched off
            with self.model.disable_adapter():
                return self.sequence_logprobs(sequences, masks)[0]
        if self._reference is None:
            raise RuntimeError("this strategy keeps no reference model (reference=False)")
        return sequence_logprobs(
            self._reference,
            sequences,
            masks,
            pad_id=self.pad_id,
            token_budget=self.micro_batch_tokens,
            temperature=self.loss.temperature,
            packing=self.packing,
        )[0]

    # ------------------------------------------------------------------ training
    def train_step(self, batch: TokenBatch) -> dict[str, float]:
        settings = self.loss
        per_sequence = settings.aggregation != "token-mean"
        total = len(batch) if per_sequence else max(batch.valid_tokens, 1)
        sums: dict[str, float] = {}
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        for group in self._micro_batches(batch):
            part = batch.select(group)
            share = (len(group) if per_sequence else part.valid_tokens) / total
            if share == 0:
                continue
            loss, metrics = self._micro_batch_loss(part)
            (loss * share).backward()
            for name, value in metrics.items():
                sums[name] = sums.get(name, 0.0) + float(value) * share
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        max_norm = self.grad_clip if self.grad_clip is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        self.optimizer.step()
        sums["grad_norm"] = float(grad_norm)
        sums["tokens"] = float(batch.valid_tokens)
        return sums

    def supervised_step(self, batch: TokenBatch) -> dict[str, float]:
        """One optimiser step of next-token cross-entropy on the masked tokens (SFT).

        loss = - sum_t mask_t log p(token_t | tokens_<t) / sum_t mask_t
        """
        total = max(batch.valid_tokens, 1)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        nll_sum = 0.0
        for group in self._micro_batches(batch):
            part = batch.select(group)
            layout = Layout.of(part.token_ids, self.pad_id, packed=self.packing)
            logprobs = score_layout(self.model, layout, part.loss_mask).logprobs
            mask = layout.place(part.loss_mask).to(self.device)
            nll = -(logprobs * mask).sum() / total
            nll.backward()
            nll_sum += nll.item()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        max_norm = self.grad_clip if self.grad_clip is not None else float("inf")
        grad_norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        self.optimizer.step()
        return {"sft/loss": nll_sum, "sft/grad_norm": float(grad_norm), "tokens": float(total)}

    def _micro_batches(self, batch: TokenBatch) -> list[list[int]]:
        lengths = [len(s) for s in batch.token_ids]
        return list(micro_batches(lengths, self.micro_batch_tokens, packed=self.packing))

    def _micro_batch_loss(self, part: TokenBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        settings = self.loss
        layout = Layout.of(part.token_ids, self.pad_id, packed=self.packing)
        scores = score_layout(
            self.model,
            layout,
            part.loss_mask,
            temperature=settings.temperature,
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
        loss, metrics = ppo_policy_loss(
            logprobs,
            old_logprobs,
            advantages,
            mask,
            clip_low=settings.clip_low,
            clip_high=settings.clip_high,
            dual_clip=settings.dual_clip,
            aggregation=settings.aggregation,
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

    def save(self, folder: Path) -> None:
        """Writes ``model/`` (a Hugging Face folder, LoRA merged) and ``strategy.pt``.

        ``strategy.pt`` holds the optimizer, the value head and, with LoRA, the adapters; full
        weights live only in ``model/``.
        """
        folder = Path(folder)
        base = self.model.get_base_model() if self.lora is not None else self.model
        base.save_pretrained(folder / "model", state_dict=self.inference_state_dict())
        adapters = None
        if self.lora is not None:
            adapters = {
                n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad
            }
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "adapters": adapters,
                "value_head": None if self.value_head is None else self.value_head.state_dict(),
            },
            folder / "strategy.pt",
        )

    def load(self, folder: Path) -> None:
        """Restores what ``save`` wrote: weights, value head and optimizer state."""
        folder = Path(folder)
        state = torch.load(folder / "strategy.pt", weights_only=False)
        with torch.no_grad():
            if self.lora is not None:
                parameters = dict(self.model.named_parameters())
                for name, value in state["adapters"].items():
                    parameters[name].copy_(value)
            else:
                load_model_folder_weights(self.model, folder / "model")
        if self.value_head is not None and state["value_head"] is not None:
            self.value_head.load_state_dict(state["value_head"])
        self.optimizer.load_state_dict(state["optimizer"])

    def load_optimizer_moments(self, folder: Path) -> None:
        """Starts the optimizer from the moments in ``folder/strategy.pt``, keeping this
        strategy's lr, betas and weight decay (the weights are not touched).

        Raises:
            ValueError: the checkpoint's optimizer is over other parameters.
        """
        path = Path(folder) / "strategy.pt"
        if not path.exists():
            raise FileNotFoundError(f"optim.moments_from: no {path} (a checkpoint folder has one)")
        saved = torch.load(path, weights_only=False)["optimizer"]
        settings = [
            {k: v for k, v in group.items() if k != "params"}
            for group in self.optimizer.param_groups
        ]
        try:
            self.optimizer.load_state_dict(saved)
        except ValueError as error:
            raise ValueError(
                f"optim.moments_from: {path} holds the optimizer of other parameters ({error})"
            ) from None
        for group, own in zip(self.optimizer.param_groups, settings, strict=True):
            group.update(own)


def load_model_folder_weights(model: nn.Module, folder: Path) -> None:
    """Copies the safetensors weights of a Hugging Face folder into ``model`` in place."""
    from safetensors.torch import load_file

    weights: dict[str, torch.Tensor] = {}
    for file in sorted(Path(folder).glob("*.safetensors")):
        weights.update(load_file(file))
    missing, unexpected = model.load_state_dict(weights, strict=False)
    tied = {"lm_head.weight"} if getattr(model.config, "tie_word_embeddings", False) else set()
    if unexpected or set(missing) - tied:
        raise ValueError(
            f"checkpoint {folder} does not match the model: missing {sorted(set(missing) - tied)}, "
            f"unexpected {sorted(unexpected)}"
        )
