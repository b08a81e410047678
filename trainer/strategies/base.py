"""The ``Strategy`` interface: how the policy is updated and where its weights live.

Backends: ``TorchStrategy`` (one process, CPU or one GPU) and ``RayStrategy`` (a Ray group of
train workers sharding the update with FSDP2 or DeepSpeed ZeRO, gloo on CPU, NCCL on GPU); see
``trainer.strategies.from_config``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import torch

from trainer.batch import TokenBatch


class Strategy(Protocol):
    def sequence_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor], *, with_values: bool = False
    ) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
        """Log-probs of the masked tokens under the current policy (and values), no grad."""
        ...

    def reference_logprobs(
        self, sequences: list[list[int]], masks: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """Log-probs of the masked tokens under the frozen reference policy."""
        ...

    def train_step(self, batch: TokenBatch) -> dict[str, float]:
        """One optimiser step on ``batch``; returns metrics."""
        ...

    def inference_state_dict(self) -> Mapping[str, torch.Tensor]:
        """Full policy weights for a generator (LoRA merged in)."""
        ...

    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> None: ...
