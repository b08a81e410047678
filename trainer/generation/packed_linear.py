"""``PackedLinear``: a float32 linear layer that also keeps its weight in MKL's packed layout.

A decode step multiplies a few rows (one per running sequence) by every weight matrix. On this
2-core CPU a float32 ``F.linear`` reaches less than half the arithmetic rate at 8-64 rows that it
reaches on a long prompt: MKL re-arranges (packs) the weight into the order its kernel reads it
on every call. ``cblas_sgemm_pack`` does that once; torch exposes it as
``torch.ops.mkl._mkl_reorder_linear_weight`` / ``torch.ops.mkl._mkl_linear`` (what
TorchInductor uses for frozen float32 linears). A pack is made for one row count and is only
used for exactly that many rows, so this class keeps one pack per *bucket* (8, 32, 64 for a
batch of 64) and pads the rows up to the next bucket: 9-32 rows all run on the 32-row pack,
which is faster than ``F.linear`` on any of those counts with SmolLM2-135M's 30 layers of
weights (too large for the CPU caches, as in a real decode step), as measured when this class
was written; ``generation.packed_weights=false`` turns the packs off to compare again.

Each pack is a copy of the weight, made the first time its bucket is used: a model's float32
weights once more per bucket in use. Above the largest bucket (prompts), or below ``min_rows``
(where reading the weight is all the time there is), the plain ``F.linear`` runs.

Example:
    >>> import torch
    >>> weight = torch.randn(32, 16)
    >>> linear = PackedLinear(weight, None, buckets=(4, 8))
    >>> x = torch.randn(5, 16)
    >>> torch.allclose(linear(x), torch.nn.functional.linear(x, weight), atol=1e-5)
    True
    >>> sorted(linear.packed_buckets)  # 5 rows ran on the 8-row pack
    [8]
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from trainer.generation.small_batch_weights import FORMATS, CompactWeight

__all__ = ["PackedLinear", "packing_available", "row_buckets"]


def packing_available(dtype: torch.dtype, device: torch.device | str) -> bool:
    """Whether this torch build can pack weights of ``dtype`` on ``device`` (float32 on a CPU
    with MKL)."""
    return (
        dtype == torch.float32
        and torch.device(device).type == "cpu"
        and torch.backends.mkl.is_available()
        and hasattr(torch.ops.mkl, "_mkl_linear")
    )


def row_buckets(max_rows: int) -> tuple[int, ...]:
    """8, 32, 128, ... (each four times the last), the last one cut to ``max_rows``.

    Few buckets, because every one is a copy of the weights to make again at each weight
    update; and the packed matmul costs about the same from 8 to 32 rows (it reads the weight
    once either way), so padding 9 rows to 32 loses little.

    Example:
        >>> row_buckets(64)
        (8, 32, 64)
    """
    buckets = [8]
    while buckets[-1] < max_rows:
        buckets.append(min(buckets[-1] * 4, max_rows))
    return tuple(buckets)


class PackedLinear:
    """``y = x @ weight.T + bias``, on an MKL-packed copy of ``weight`` for small row counts.

    The weight is held, not copied: in-place loads into it (``load_state_dict``) are seen by
    the plain path at once and by the packed path after :meth:`repack`.

    Args:
        weight: ``(out_features, in_features)`` float32 weight, as ``nn.Linear`` holds it.
        bias: ``(out_features,)`` or ``None``.
        buckets: the row counts packs are made for; rows are padded up to the next one.
            Empty: always ``F.linear`` (any dtype).
        min_rows: fewer rows than this use ``F.linear``.
        small_rows: up to this many rows run on a compact copy of the weight, made when
            first used (:mod:`~trainer.generation.small_batch_weights`); 0: never.
        small_format: that copy's format: ``"int4"``, ``"int8"`` or ``"bfloat16"``.
    """

    def __init__(
        self,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        buckets: Sequence[int],
        min_rows: int = 3,
        small_rows: int = 0,
        small_format: str = "int4",
    ) -> None:
        if buckets and (weight.dtype != torch.float32 or weight.dim() != 2):
            raise ValueError(f"packing needs a 2-d float32 weight, got {weight.dtype}")
        self.weight, self.bias = weight.detach(), None if bias is None else bias.detach()
        self.buckets = tuple(sorted(buckets))
        self.min_rows = min_rows
        self.small_rows = small_rows
        self._small_format = FORMATS[small_format]
        self._packs: dict[int, torch.Tensor] = {}
        self._small: CompactWeight | None = None

    @property
    def packed_buckets(self) -> tuple[int, ...]:
        """The buckets that have a pack (those used since the last weight change)."""
        return tuple(self._packs)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        if rows <= self.small_rows and x.dim() == 2:
            return self.compact(x).to(x.dtype)
        bucket = next((b for b in self.buckets if b >= rows), None)
        if bucket is None or rows < self.min_rows or x.dim() != 2:
            return F.linear(x, self.weight, self.bias)
        pack = self._packs.get(bucket)
        if pack is None:
            pack = self._packs[bucket] = self._pack(bucket)
        if rows < bucket:
            x = F.pad(x, (0, 0, 0, bucket - rows))
        out = torch.ops.mkl._mkl_linear(x.contiguous(), pack, self.weight, self.bias, bucket)
        return out[:rows]

    def compact(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T + bias`` on the compact copy, left in the copy's bfloat16 (plus the
        bias's dtype, if any): the caller converts once where it needs to, not around every
        matmul. For ``x`` of 2 dimensions and at most ``small_rows`` rows."""
        if x.shape[0] > self.small_rows or x.dim() != 2:
            raise ValueError(
                f"the compact copy runs up to {self.small_rows} rows of 2-d input, "
                f"got shape {tuple(x.shape)}"
            )
        if self._small is None:
            self._small = self._small_format.quantize(self.weight)
        out = self._small.mm(x)
        return out if self.bias is None else out + self.bias

    def copy_bytes(self) -> int:
        """Bytes of every copy this layer may make: a pack for each bucket it can reach (those
        above ``small_rows``) and the compact copy, made or not yet."""
        rows, columns = self.weight.shape
        reachable = [b for b in self.buckets if b > self.small_rows]
        packs = len(reachable) * self.weight.numel() * self.weight.element_size()
        small = self._small_format.nbytes_for(rows, columns) if self.small_rows else 0
        return packs + small

    def make_copies(self) -> None:
        """Makes now every copy :meth:`copy_bytes` counts, instead of at each one's first use
        (a server does, so that no request waits for them)."""
        if self.small_rows and self._small is None:
            self._small = self._small_format.quantize(self.weight)
        for bucket in self.buckets:
            if bucket > self.small_rows and bucket not in self._packs:
                self._packs[bucket] = self._pack(bucket)

    def repack(self) -> None:
        """Re-packs every bucket in use (and the compact copy), after the weight changed in
        place."""
        for bucket in self._packs:
            self._packs[bucket] = self._pack(bucket)
        if self._small is not None:
            self._small = self._small_format.quantize(self.weight)

    def drop_packs(self) -> None:
        """Forgets the packs (they are made again when next used)."""
        self._packs.clear()
        self._small = None

    def _pack(self, bucket: int) -> torch.Tensor:
        with torch.inference_mode():
            return torch.ops.mkl._mkl_reorder_linear_weight(self.weight, bucket)
