"""Peak dense FLOP/s of the GPUs the book's training-time estimates use, as data.

Values are NVIDIA's published peak numbers for the SXM form factor *without* structured sparsity
(the data sheets' headline tensor-core figures for A100 and H100 assume 2:4 sparsity and are twice
these). Used in chapter :doc:`/chapters/transformer-flops`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ._validate import check_choice

__all__ = ["GPUSpec", "GPUS", "GPU_PRECISIONS", "gpu_peak_flops"]

#: Precisions of ``GPUSpec.peak_flops`` (``*_tensor``: on tensor cores; ``fp32``/``fp64``:
#: on the ordinary CUDA cores).
GPU_PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor")


@dataclass(frozen=True)
class GPUSpec:
    """One GPU: its name, peak dense FLOP/s by precision, and the reference (a BibTeX key)."""

    name: str
    peak_flops: Mapping[str, float]
    source: str
    note: str = ""


_T = 1e12

#: The GPUs llmmath knows, by name. Precisions a GPU lacks are absent.
GPUS: Mapping[str, GPUSpec] = MappingProxyType(
    {
        "V100": GPUSpec(
            name="Tesla V100 SXM2",
            peak_flops=MappingProxyType({"fp64": 7.8 * _T, "fp32": 15.7 * _T, "fp16_tensor": 125 * _T}),
            source="nvidia2017v100",
            note="Volta tensor cores: FP16 inputs only (no BF16, no TF32)",
        ),
        "A100": GPUSpec(
            name="A100 SXM4",
            peak_flops=MappingProxyType({
                "fp64": 9.7 * _T, "fp64_tensor": 19.5 * _T, "fp32": 19.5 * _T, "tf32_tensor": 156 * _T,
                "fp16_tensor": 312 * _T, "bf16_tensor": 312 * _T,
            }),
            source="nvidia2020a100",
            note="same numbers for the 40 GB and 80 GB SXM4 parts",
        ),
        "H100": GPUSpec(
            name="H100 SXM5",
            peak_flops=MappingProxyType({
                "fp64": 33.5 * _T, "fp64_tensor": 66.9 * _T, "fp32": 66.9 * _T, "tf32_tensor": 494.7 * _T,
                "fp16_tensor": 989.4 * _T, "bf16_tensor": 989.4 * _T, "fp8_tensor": 1978.9 * _T,
            }),
            source="nvidia2022h100",
            note="dense values; the data sheet's 1979 TFLOP/s BF16 assumes 2:4 sparsity",
        ),
    }
)


def gpu_peak_flops(gpu: str, precision: str = "bf16_tensor") -> float:
    """Peak dense FLOP/s of ``gpu`` (a key of :data:`GPUS`) at ``precision`` (one of
    :data:`GPU_PRECISIONS` the GPU supports). Used in chapter :doc:`/chapters/transformer-flops`.
    """
    check_choice("gpu", gpu, GPUS)
    spec = GPUS[gpu]
    check_choice("precision", precision, spec.peak_flops)
    return float(spec.peak_flops[precision])
