"""llmmath: the formula sheet of the book *The mathematics of training large language models*.

Every formula of the book lives here exactly once; each chapter notebook explains and calls it.
The chapter that derives a function is named in its docstring.
"""

from __future__ import annotations

from .config import ACTIVATIONS, SUPPORTED_MODEL_TYPES, TransformerConfig, from_hf_config
from .matmul import (
    OpCount,
    batched_matmul_flops,
    chain_flops,
    counted_matmul,
    matmul_flops,
    measure_matmul_flops_per_second,
    naive_matmul,
    optimal_chain_order,
)
from .presets import PRESETS, preset, preset_names

__version__ = "0.1.0"

__all__ = [
    "ACTIVATIONS",
    "SUPPORTED_MODEL_TYPES",
    "TransformerConfig",
    "from_hf_config",
    "OpCount",
    "batched_matmul_flops",
    "chain_flops",
    "counted_matmul",
    "matmul_flops",
    "measure_matmul_flops_per_second",
    "naive_matmul",
    "optimal_chain_order",
    "PRESETS",
    "preset",
    "preset_names",
]
