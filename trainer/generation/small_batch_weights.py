"""Compact copies of linear weights for decode steps of a few sequences on a CPU.

A decode step of a few sequences reads every weight once: at one sequence, its time is the
weights' bytes over the memory bandwidth. So SmolLM2-135M's linear layers run a decode step
fastest as 4-bit groups through torch's ``_weight_int4pack_mm_for_cpu`` (bfloat16
activations), then in bfloat16, then in float32; at 64 rows the 4-bit kernel is no faster than
float32, and on a long prompt float32 is faster, so prompts keep the float32 weights
(``benchmarks/serve_load.py`` measures ``int4`` against ``float32``, speed and agreement).

:class:`Int4Weight` cuts each row of a weight into groups of 32 input columns, each stored as
4-bit integers ``q`` with a scale and a minimum: ``w = q * scale + minimum`` (torch's kernel
takes it as ``(q - 8) * scale + zero``). The default SmolLM2 comes as a GGUF whose layers are
``Q4_1``: exactly this layout (blocks of 32, a scale and a minimum), so its dequantised float32
weights quantise back to the same integers, and only the scale and minimum are rounded (to
bfloat16). Its output head (tied to the embedding) is ``Q8_0`` in the GGUF: 4-bit groups would
move its logits too far, so the head gets an :class:`Int8Weight` copy instead (one scale a
row), and :func:`rescore_top_logits` recomputes each step's largest logits from the float32
head. Inside SmolLM2's decode steps (where the layers' weights have pushed the head out of the
CPU's caches) the 8-bit head is faster than a bfloat16 copy, and with the largest logits
recomputed its greedy replies agree with float32's more often than the bfloat16 head's do.

Example:
    >>> import torch
    >>> weight = torch.randn(64, 96)
    >>> packed = Int4Weight.quantize(weight)
    >>> x = torch.randn(2, 96)
    >>> error = (packed(x) - x @ weight.T).norm() / (x @ weight.T).norm()
    >>> bool(error < 0.15)
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "FORMATS",
    "GROUP_SIZE",
    "BFloat16Weight",
    "CompactWeight",
    "Int4Weight",
    "Int8Weight",
    "int4_available",
    "rescore_top_logits",
]

GROUP_SIZE = 32


def int4_available(device: torch.device | str, in_features: int) -> bool:
    """Whether this torch build runs 4-bit weights of ``in_features`` columns on ``device``."""
    return (
        torch.device(device).type == "cpu"
        and hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu")
        and in_features % GROUP_SIZE == 0
    )


class CompactWeight:
    """A weight's compact copy: :meth:`mm` is ``x @ weight.T`` left in bfloat16 (the kernels'
    own output), and calling it converts back to ``x``'s dtype."""

    def mm(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.mm(x).to(x.dtype)


@dataclass(frozen=True)
class Int4Weight(CompactWeight):
    """A ``(out_features, in_features)`` weight as packed 4-bit groups; call it on ``x`` for
    ``x @ weight.T`` (the bias is the caller's)."""

    packed: torch.Tensor
    scale_and_zero: torch.Tensor  # (in_features / GROUP_SIZE, out_features, 2), bfloat16

    @staticmethod
    def nbytes_for(rows: int, columns: int) -> int:
        """Bytes of the copy of a ``rows x columns`` weight: half a byte a weight, and a
        bfloat16 scale and zero for each group."""
        return rows * columns // 2 + rows * columns // GROUP_SIZE * 4

    @classmethod
    def quantize(cls, weight: torch.Tensor) -> Int4Weight:
        """Packs ``weight`` (any float dtype) into 4-bit groups of :data:`GROUP_SIZE`."""
        rows, columns = weight.shape
        if rows % 16 or columns % GROUP_SIZE:
            raise ValueError(
                f"4-bit packing needs rows in multiples of 16 and columns in multiples of "
                f"{GROUP_SIZE}, got a {rows}x{columns} weight"
            )
        with torch.inference_mode():
            groups = weight.detach().float().reshape(rows, columns // GROUP_SIZE, GROUP_SIZE)
            low, high = groups.amin(dim=-1), groups.amax(dim=-1)
            scale = ((high - low) / 15).clamp(min=1e-12)
            q = ((groups - low[..., None]) / scale[..., None]).round().clamp(0, 15)
            packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
                q.to(torch.int32).reshape(rows, columns), 1
            )
            zero = low + 8 * scale  # the kernel computes (q - 8) * scale + zero
            scale_and_zero = torch.stack([scale, zero], dim=-1).transpose(0, 1).contiguous()
        return cls(packed, scale_and_zero.to(torch.bfloat16))

    def mm(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` in bfloat16, the kernel's own output (``x`` is rounded to it)."""
        return torch.ops.aten._weight_int4pack_mm_for_cpu(
            x.to(torch.bfloat16), self.packed, GROUP_SIZE, self.scale_and_zero
        )


@dataclass(frozen=True)
class BFloat16Weight(CompactWeight):
    """A weight rounded to bfloat16; call it on ``x`` for ``x @ weight.T`` in ``x``'s dtype."""

    weight: torch.Tensor

    @staticmethod
    def nbytes_for(rows: int, columns: int) -> int:
        """Bytes of the copy of a ``rows x columns`` weight."""
        return rows * columns * 2

    @classmethod
    def quantize(cls, weight: torch.Tensor) -> BFloat16Weight:
        """A bfloat16 copy of ``weight``."""
        with torch.inference_mode():
            return cls(weight.detach().to(torch.bfloat16))

    def mm(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` in bfloat16 (``x`` is rounded to it)."""
        return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight)


@dataclass(frozen=True)
class Int8Weight(CompactWeight):
    """A ``(out_features, in_features)`` weight as 8-bit integers with one bfloat16 scale a row
    (``w = q * scale``, ``|q| <= 127``), through torch's ``_weight_int8pack_mm``; call it on
    ``x`` for ``x @ weight.T``.

    For an output head: half the bytes of bfloat16 to read each step. One scale a row is
    coarser than the GGUF's ``Q8_0`` (a scale per 32), so a caller that needs the top logits
    exact recomputes them from the float weight (see
    :func:`rescore_top_logits`).
    """

    quantized: torch.Tensor  # int8, (out_features, in_features)
    scale: torch.Tensor  # bfloat16, (out_features,)

    #: the kernel reads columns in blocks of 16 (on 100 columns it crashed the process)
    COLUMN_MULTIPLE = 16

    @staticmethod
    def nbytes_for(rows: int, columns: int) -> int:
        """Bytes of the copy: a byte a weight and a bfloat16 scale a row."""
        return rows * columns + rows * 2

    @classmethod
    def quantize(cls, weight: torch.Tensor) -> Int8Weight:
        """Rounds ``weight`` (any float dtype) to 8 bits, each row scaled by its largest
        magnitude."""
        columns = weight.shape[1]
        if columns % cls.COLUMN_MULTIPLE:
            raise ValueError(
                f"8-bit rows need columns in multiples of {cls.COLUMN_MULTIPLE}, got {columns}"
            )
        with torch.inference_mode():
            weight = weight.detach().float()
            scale = (weight.abs().amax(dim=1) / 127).clamp(min=1e-12).to(torch.bfloat16)
            quantized = (weight / scale.float()[:, None]).round().clamp(-127, 127)
        return cls(quantized.to(torch.int8).contiguous(), scale)

    def mm(self, x: torch.Tensor) -> torch.Tensor:
        """``x @ weight.T`` in bfloat16 (``x`` is rounded to it)."""
        return torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), self.quantized, self.scale)


#: How many of each row's largest logits :func:`rescore_top_logits` recomputes by default.
RESCORED_LOGITS = 16


def rescore_top_logits(
    logits: torch.Tensor,
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    k: int = RESCORED_LOGITS,
) -> torch.Tensor:
    """Recomputes, in place, each row's ``k`` largest ``logits`` from the float ``weight``.

    ``logits`` come from a compact copy of an output head (:class:`Int8Weight`): close, but
    rounded enough to swap near-tied tokens. The tokens that greedy decoding and nucleus
    sampling pick from are among the largest, so their logits become exactly
    ``hidden @ weight[top].T + bias``, at the cost of reading ``k`` rows of ``weight``.

    Args:
        logits: ``(rows, vocab)`` float32, overwritten.
        hidden: ``(rows, in_features)``: what the head was applied to.
        weight: the head's ``(vocab, in_features)`` float weight.
        bias: its ``(vocab,)`` bias, if any.
        k: how many logits a row to recompute.

    Returns:
        ``logits``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> weight = torch.randn(64, 32)
        >>> hidden = torch.randn(2, 32)
        >>> logits = Int8Weight.quantize(weight)(hidden).float()
        >>> exact = hidden @ weight.T
        >>> top = exact.topk(4).indices
        >>> bool((logits.gather(1, top) == exact.gather(1, top)).all())
        False
        >>> logits = rescore_top_logits(logits, hidden, weight, k=8)
        >>> torch.allclose(logits.gather(1, top), exact.gather(1, top))
        True
    """
    top = logits.topk(min(k, logits.shape[-1]), dim=-1).indices  # (rows, k)
    rows = weight[top].to(torch.float32)  # (rows, k, in_features)
    exact = torch.bmm(rows, hidden.to(torch.float32)[:, :, None])[..., 0]
    if bias is not None:
        exact += bias[top].to(torch.float32)
    return logits.scatter_(1, top, exact)


#: The copies a :class:`~trainer.generation.packed_linear.PackedLinear` can keep, by name.
FORMATS: dict[str, type[Int4Weight] | type[Int8Weight] | type[BFloat16Weight]] = {
    "int4": Int4Weight,
    "int8": Int8Weight,
    "bfloat16": BFloat16Weight,
}
