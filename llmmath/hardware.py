"""Accelerators as data: peak FLOP/s, memory, memory bandwidth and interconnects, each sourced.

Every figure is the vendor's published value (the ``source`` field is a key of the book's
``references.bib``; ``note`` says where a value comes from another page of the same vendor).
Peak FLOP/s are **dense**: where a data sheet's headline tensor figure assumes 2:4 structured
sparsity (NVIDIA since A100, AMD for MI300X) the dense value, half of it, is stored and the
``note`` says so; TPUs have no sparsity mode. Bandwidths are bytes per second; link bandwidths are
**per accelerator and per direction** (a data sheet's "900 GB/s NVLink" counts both directions:
450 GB/s each way). Memory capacity is the data sheet's figure in decimal bytes (``80 GB`` ->
``80e9``), which is a little less than the ``81,920 MiB`` ``nvidia-smi`` shows for an 80 GB part:
the conservative reading for "does it fit". Link latencies are assumptions (the alpha of an
alpha-beta model), not data-sheet figures.

Used from chapter :doc:`/chapters/matmul-cost` (the roofline) on, in
:doc:`/chapters/transformer-flops`, :doc:`/chapters/serving` and :doc:`/chapters/capstone`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ._validate import check_choice, check_positive
from .units import DTYPES

__all__ = [
    "Link",
    "Accelerator",
    "GPUSpec",
    "GPUS",
    "GPU_PRECISIONS",
    "accelerator",
    "gpu_peak_flops",
    "default_precision",
    "check_storage_dtype",
    "ridge_point",
    "roofline_seconds",
]

#: Precisions of ``Accelerator.peak_flops`` (``*_tensor``: on tensor/matrix cores; ``fp32``/``fp64``:
#: on the ordinary vector cores). ``int8_tensor`` is in operations per second.
GPU_PRECISIONS = ("fp64", "fp64_tensor", "fp32", "tf32_tensor", "fp16_tensor", "bf16_tensor", "fp8_tensor",
                  "int8_tensor")


@dataclass(frozen=True)
class Link:
    """One interconnect as seen by one accelerator: ``bandwidth`` bytes/s per direction and
    ``latency`` seconds per message (the alpha of an alpha-beta cost model; an assumption, stated
    in ``note``, not a data-sheet figure)."""

    name: str
    bandwidth: float
    latency: float
    note: str = ""


@dataclass(frozen=True)
class Accelerator:
    """One accelerator: dense peak FLOP/s by precision, HBM capacity (bytes) and bandwidth
    (bytes/s), the fast link within a node or pod (``scale_up``, shared by ``domain_size``
    accelerators: NVLink/NVSwitch, Infinity Fabric, TPU ICI) and the network across nodes
    (``scale_out``: InfiniBand/RoCE NICs, one per accelerator), the storage formats
    (:data:`llmmath.DTYPES`) it has no kernels for (``unsupported_dtypes``: format -> why), and the
    reference (a BibTeX key)."""

    name: str
    peak_flops: Mapping[str, float]
    source: str
    memory_bytes: int = 0
    memory_bandwidth: float = 0.0
    scale_up: Link | None = None
    scale_out: Link | None = None
    domain_size: int = 1
    note: str = ""
    unsupported_dtypes: Mapping[str, str] = field(default_factory=dict)


#: The name used before the table covered TPUs (kept for existing code).
GPUSpec = Accelerator

_T = 1e12
_GB = 10**9
_US = 1e-6

#: Latency assumptions of the alpha-beta model (per message): a few microseconds within an
#: NVLink domain, about ten across an InfiniBand/RoCE fabric (typical nccl-tests small-message
#: figures; they matter only for small messages). kipply's inference arithmetic assumes 8 us per
#: NVLink message, after a V100 measurement.
_NVLINK_LATENCY, _NET_LATENCY = 3 * _US, 10 * _US


def _nvlink(gen: int, total_gb_s: float) -> Link:
    return Link(f"NVLink {gen} (NVSwitch)", total_gb_s / 2 * _GB, _NVLINK_LATENCY,
                f"data sheet: {total_gb_s:g} GB/s total, both directions")


def _net(gbit: int, kind: str = "InfiniBand NDR") -> Link:
    return Link(f"{kind} {gbit} Gb/s per GPU", gbit / 8 * _GB, _NET_LATENCY,
                "one NIC per accelerator, as in DGX/HGX systems")


_HDR, _NDR = _net(200, "InfiniBand HDR"), _net(400)

#: The H100 SXM5's dense tensor FLOP/s (Table 3 of the H100 whitepaper; the data sheets print the
#: 2:4-sparse values 1,979 TFLOP/s BF16 and 3,958 FP8/INT8, and 34/67/67 for FP64/FP64 tensor/FP32).
_HOPPER_SXM = MappingProxyType({
    "fp64": 33.5 * _T, "fp64_tensor": 66.9 * _T, "fp32": 66.9 * _T, "tf32_tensor": 494.7 * _T,
    "fp16_tensor": 989.4 * _T, "bf16_tensor": 989.4 * _T, "fp8_tensor": 1978.9 * _T, "int8_tensor": 1978.9 * _T,
})

#: The A100's FLOP/s (dense; the data sheet prints each tensor figure dense and, starred, with 2:4
#: sparsity: 312/624 TFLOP/s BF16, 156/312 TF32, 624/1,248 TOPS INT8).
_AMPERE = MappingProxyType({
    "fp64": 9.7 * _T, "fp64_tensor": 19.5 * _T, "fp32": 19.5 * _T, "tf32_tensor": 156 * _T,
    "fp16_tensor": 312 * _T, "bf16_tensor": 312 * _T, "int8_tensor": 624 * _T,
})

#: The accelerators llmmath knows, by key. Precisions an accelerator lacks are absent.
GPUS: Mapping[str, Accelerator] = MappingProxyType(
    {
        "V100": Accelerator(
            name="Tesla V100 SXM2 32 GB",
            peak_flops=MappingProxyType({"fp64": 7.8 * _T, "fp32": 15.7 * _T, "fp16_tensor": 125 * _T}),
            source="nvidia2017v100", memory_bytes=32 * _GB, memory_bandwidth=900 * _GB,
            scale_up=_nvlink(2, 300), scale_out=_net(100, "InfiniBand EDR"), domain_size=8,
            note="Volta tensor cores: FP16 inputs only (no BF16, no TF32); FLOP/s at the 1,530 MHz "
                 "boost clock (whitepaper Table 1); the 32 GB module came in 2018 (whitepaper: 16 GB)",
            unsupported_dtypes=MappingProxyType({
                "fp8": "no FP8 weights or KV cache: vLLM's FP8 kernels need compute capability 7.5 "
                       "(weight-only FP8 Marlin) or 8.9 (W8A8); the V100 is 7.0"}),
        ),
        "A100-40GB": Accelerator(
            name="A100 SXM4 40 GB", peak_flops=_AMPERE,
            source="nvidia2020a100", memory_bytes=40 * _GB, memory_bandwidth=1555 * _GB,
            scale_up=_nvlink(3, 600), scale_out=_HDR, domain_size=8,
            note="dense values; the sheet also prints 2:4-sparse ones, twice these (624 TFLOP/s BF16)",
        ),
        "A100": Accelerator(
            name="A100 SXM4 80 GB", peak_flops=_AMPERE,
            source="nvidia2021a100", memory_bytes=80 * _GB, memory_bandwidth=2039 * _GB,
            scale_up=_nvlink(3, 600), scale_out=_HDR, domain_size=8,
            note="dense values; the sheet also prints 2:4-sparse ones, twice these (624 TFLOP/s BF16)",
        ),
        "H100": Accelerator(
            name="H100 SXM5 80 GB", peak_flops=_HOPPER_SXM,
            source="nvidia2022h100", memory_bytes=80 * _GB, memory_bandwidth=3350 * _GB,
            scale_up=_nvlink(4, 900), scale_out=_NDR, domain_size=8,
            note="dense values; the data sheet's headline 1,979 TFLOP/s BF16 assumes 2:4 sparsity; "
                 "3.35 TB/s as the data sheet prints it (whitepaper: 3,352 GB/s, preliminary)",
        ),
        "H100-PCIe": Accelerator(
            name="H100 PCIe 80 GB",
            peak_flops=MappingProxyType({
                "fp64": 25.6 * _T, "fp64_tensor": 51.2 * _T, "fp32": 51.2 * _T, "tf32_tensor": 378 * _T,
                "fp16_tensor": 756 * _T, "bf16_tensor": 756 * _T, "fp8_tensor": 1513 * _T,
                "int8_tensor": 1513 * _T,
            }),
            source="nvidia2022h100", memory_bytes=80 * _GB, memory_bandwidth=2000 * _GB,
            scale_up=Link("NVLink bridge (pairs)", 300 * _GB, _NVLINK_LATENCY, "data sheet: 600 GB/s total"),
            scale_out=_NDR, domain_size=2,
            note="dense values (whitepaper Table 3); the data sheet prints the 2:4-sparse ones, "
                 "1,513 TFLOP/s BF16 and 3,026 FP8, and rounds FP64/FP32 to 26/51",
        ),
        "H800": Accelerator(
            name="H800 SXM5 80 GB",
            peak_flops=MappingProxyType({k: v for k, v in _HOPPER_SXM.items() if not k.startswith("fp64")}),
            source="zhao2025insights", memory_bytes=80 * _GB, memory_bandwidth=3350 * _GB,
            scale_up=Link("NVLink 4 (NVSwitch), export-limited", 200 * _GB, _NVLINK_LATENCY,
                          "Zhao et al. (2025): 'reduced from 900 GB/s to 400 GB/s' (both directions); "
                          "DeepSeek-V3's report: 'NVLink offers a bandwidth of 160 GB/s' in practice"),
            scale_out=_NDR, domain_size=8,
            note="the H100 SXM5's tensor FLOP/s and HBM: Zhao et al. (2025) name only two differences, "
                 "'reduced FP64 computational performance and NVLink bandwidth for regulatory compliance' "
                 "(the FP64 rates are not stored); eight 400 Gb/s InfiniBand NICs per node of 8, "
                 "'IB (50 GB/s)' in DeepSeek-V3's report",
        ),
        "H200": Accelerator(
            name="H200 SXM 141 GB", peak_flops=_HOPPER_SXM,
            source="nvidia2024h200", memory_bytes=141 * _GB, memory_bandwidth=4800 * _GB,
            scale_up=_nvlink(4, 900), scale_out=_NDR, domain_size=8,
            note="the H100 SXM5's compute (the H200 sheet prints the same rounded, sparse figures: "
                 "1,979 TFLOP/s BF16 with sparsity) with more and faster memory",
        ),
        "B200": Accelerator(
            name="B200 (HGX B200) 180 GB",
            peak_flops=MappingProxyType({
                "fp64": 37 * _T, "fp64_tensor": 37 * _T, "tf32_tensor": 1100 * _T, "fp16_tensor": 2250 * _T,
                "bf16_tensor": 2250 * _T, "fp8_tensor": 4500 * _T, "int8_tensor": 4500 * _T,
            }),
            source="nvidia2024b200", memory_bytes=180 * _GB, memory_bandwidth=7700 * _GB,
            scale_up=_nvlink(5, 1800), scale_out=_NDR, domain_size=8,
            note="per GPU of an HGX B200 (8 GPUs, 1,000 W); dense values: the sheet's tensor headlines "
                 "(4.5 PFLOP/s BF16, 9 FP8 per GPU) assume 2:4 sparsity; DGX B200 lists 64 TB/s per 8 GPUs",
        ),
        "MI300X": Accelerator(
            name="AMD Instinct MI300X 192 GB",
            peak_flops=MappingProxyType({
                "fp64": 81.7 * _T, "fp64_tensor": 163.4 * _T, "fp32": 163.4 * _T, "tf32_tensor": 653.7 * _T,
                "fp16_tensor": 1307.4 * _T, "bf16_tensor": 1307.4 * _T, "fp8_tensor": 2614.9 * _T,
                "int8_tensor": 2614.9 * _T,
            }),
            source="amd2023mi300x", memory_bytes=192 * _GB, memory_bandwidth=5300 * _GB,
            scale_up=Link("AMD Infinity Fabric (7 links, full mesh)", 448 * _GB, _NVLINK_LATENCY,
                          "7 links of 128 GB/s (64 each way) to the 7 peers, 896 GB/s in total both "
                          "directions; one peer gets 64 GB/s each way"),
            scale_out=_net(400, "RoCE/Ethernet"), domain_size=8,
            note="dense values (AMD's ROCm table); the data sheet's sparse figures are twice these",
        ),
        "TPU-v5e": Accelerator(
            name="Google TPU v5e",
            peak_flops=MappingProxyType({"bf16_tensor": 197 * _T, "int8_tensor": 393 * _T}),
            source="google2023tpuv5e", memory_bytes=16 * _GB, memory_bandwidth=819 * _GB,
            scale_up=Link("ICI (2D torus, 4 ports)", 200 * _GB, _NVLINK_LATENCY,
                          "data sheet: 400 GB/s per chip both directions (older page: 1,600 Gb/s)"),
            scale_out=Link("data-center network (DCN)", 25 / 8 * _GB, _NET_LATENCY,
                           "data sheet: 2 x 100 Gb/s NICs per host of 8 chips"),
            domain_size=256,
            note="no sparsity; the newer page prints the bandwidth as '800 GiBps', the chip table 819 GBps",
        ),
        "TPU-v5p": Accelerator(
            name="Google TPU v5p",
            peak_flops=MappingProxyType({"bf16_tensor": 459 * _T, "int8_tensor": 918 * _T}),
            source="google2023tpuv5p", memory_bytes=95 * _GB, memory_bandwidth=2765 * _GB,
            scale_up=Link("ICI (3D torus, 6 ports)", 600 * _GB, _NVLINK_LATENCY,
                          "data sheet: 1,200 GB/s per chip both directions (older page: 4,800 Gb/s)"),
            scale_out=Link("data-center network (DCN)", 50 / 8 * _GB, _NET_LATENCY,
                           "data sheet: 50 Gb/s per chip"),
            domain_size=8960,
            note="no sparsity; 95 GB as the chip table prints it (the newer table says 95 GiB); "
                 "int8 918 TOPS from Google's announcement (the table lists BF16 and FP8, 459 each)",
        ),
    }
)

#: Lower-case aliases accepted by :func:`accelerator` (and the command line).
_ALIASES = {
    "h100-sxm": "H100", "h100-sxm5": "H100", "h100-80gb": "H100", "h800-sxm": "H800", "a100-80gb": "A100",
    "a100-sxm": "A100", "a100-40": "A100-40GB", "h100-pcie": "H100-PCIe", "tpu-v5e": "TPU-v5e",
    "tpu-v5p": "TPU-v5p", "v5e": "TPU-v5e", "v5p": "TPU-v5p", "mi300x": "MI300X",
}


def accelerator(name: str) -> Accelerator:
    """The :class:`Accelerator` called ``name``: a key of :data:`GPUS` (any case) or an alias such as
    ``h100-sxm``. An unknown name raises ``ValueError`` listing the known ones."""
    if isinstance(name, Accelerator):
        return name
    if not isinstance(name, str):
        raise TypeError(f"gpu must be an accelerator name (a string), got {type(name).__name__}")
    key = name.strip()
    by_lower = {k.lower(): k for k in GPUS} | _ALIASES
    if key in GPUS:
        return GPUS[key]
    if key.lower() in by_lower:
        return GPUS[by_lower[key.lower()]]
    raise ValueError(f"gpu must be one of {', '.join(GPUS)}; got {name!r}")


def gpu_peak_flops(gpu: str, precision: str = "bf16_tensor") -> float:
    """Peak dense FLOP/s of ``gpu`` (see :func:`accelerator`) at ``precision`` (one of
    :data:`GPU_PRECISIONS` the accelerator supports). Used in chapter
    :doc:`/chapters/transformer-flops`.
    """
    spec = accelerator(gpu)
    check_choice("precision", precision, spec.peak_flops)
    return float(spec.peak_flops[precision])


def default_precision(gpu: str) -> str:
    """The tensor precision a 16-bit model computes in on ``gpu``: ``bf16_tensor``, or
    ``fp16_tensor`` on an accelerator without BF16 (the V100). The default of the ``plan`` and
    ``serve`` commands."""
    spec = accelerator(gpu)
    return "bf16_tensor" if "bf16_tensor" in spec.peak_flops else "fp16_tensor"


def check_storage_dtype(gpu: str, name: str, dtype: str) -> str:
    """Return ``dtype`` (weights or KV cache, one of :data:`llmmath.DTYPES`) if ``gpu`` can store
    and compute with it; ``ValueError`` naming ``name`` otherwise (FP8 on a V100)."""
    spec = accelerator(gpu)
    check_choice(name, dtype, DTYPES)
    if dtype in spec.unsupported_dtypes:
        raise ValueError(f"{name} {dtype} is not supported on the {spec.name}: {spec.unsupported_dtypes[dtype]}")
    return dtype


def ridge_point(gpu: str, precision: str = "bf16_tensor") -> float:
    """The roofline's ridge point, ``peak FLOP/s / memory bandwidth``: the arithmetic intensity
    (FLOPs per byte moved to or from HBM) above which a kernel can be compute-bound.
    Derived in chapter :doc:`/chapters/matmul-cost`.
    """
    spec = accelerator(gpu)
    return gpu_peak_flops(spec, precision) / spec.memory_bandwidth


def roofline_seconds(flops: float, bytes_moved: float, gpu: str, precision: str = "bf16_tensor") -> float:
    """Lower bound on the time of a kernel under the roofline model:
    ``max(flops / peak, bytes / bandwidth)`` (compute and memory traffic fully overlapped, at
    peak). Derived in chapter :doc:`/chapters/matmul-cost`.
    """
    for name, value in (("flops", flops), ("bytes_moved", bytes_moved)):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        else:
            check_positive(name, value, allow_zero=True)
    spec = accelerator(gpu)
    return max(flops / gpu_peak_flops(spec, precision), bytes_moved / spec.memory_bandwidth)
