"""Compact copies of linear weights for decode steps of a few sequences on a CPU.

A decode step of a few sequences reads every weight once: at one sequence, its time is the
weights' bytes over the memory bandwidth. Measured on this 2-core AVX2 machine, SmolLM2-135M's
linear layers take 48 ms a step in float32, 27 ms in bfloat16 and 11 ms as 4-bit groups
through torch's ``_weight_int4pack_mm_for_cpu`` (bfloat16 activations); at 64 rows the 4-bit
kernel is about as fast as float32 (271 vs 259 ms), and on a 512-token prompt float32 is
twice as fast (29 vs 53 ms a layer), so prompts keep the float32 weights.

:class:`Int4Weight` cuts each row of a weight into groups of 32 input columns, each stored as
4-bit integers ``q`` with a scale and a minimum: ``w = q * scale + minimum`` (torch's kernel
takes it as ``(q - 8) * scale + zero``). The default SmolLM2 comes as a GGUF whose layers are
``Q4_1``: exactly this layout (blocks of 32, a scale and a minimum), so its dequantised float32
weights quantise back to the same integers, and only the scale and minimum are rounded (to
bfloat16). Its output head (tied to the embedding) is ``Q8_0`` in the GGUF: 4-bit groups would
move its logits by 9%, so the head gets a :class:`BFloat16Weight` copy instead (3.5 ms a step
against 9.3 ms in float32).

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

__all__ = ["FORMATS", "GROUP_SIZE", "BFloat16Weight", "Int4Weight", "int4_available"]

GROUP_SIZE = 32


def int4_available(device: torch.device | str, in_features: int) -> bool:
    """Whether this torch build runs 4-bit weights of ``in_features`` columns on ``device``."""
    return (
        torch.device(device).type == "cpu"
        and hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu")
        and in_features % GROUP_SIZE == 0
    )


@dataclass(frozen=True)
class Int4Weight:
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

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.ops.aten._weight_int4pack_mm_for_cpu(
            x.to(torch.bfloat16), self.packed, GROUP_SIZE, self.scale_and_zero
        )
        return out.to(x.dtype)


@dataclass(frozen=True)
class BFloat16Weight:
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

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x.to(torch.bfloat16), self.weight).to(x.dtype)


#: The copies a :class:`~trainer.generation.packed_linear.PackedLinear` can keep, by name.
FORMATS: dict[str, type[Int4Weight] | type[BFloat16Weight]] = {
    "int4": Int4Weight,
    "bfloat16": BFloat16Weight,
}
