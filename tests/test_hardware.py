"""Tests of llmmath.hardware: every table value against the figure its vendor prints.

The expected values below are typed from the vendors' pages (quotations, with where they were read),
not from llmmath: a data sheet's headline tensor figure is the 2:4-sparse one, so the table's dense
value must be half of it, to the sheet's printed digits.
"""

from __future__ import annotations

import math

import pytest

import llmmath
from llmmath.hardware import GPU_PRECISIONS, GPUS, accelerator, gpu_peak_flops, ridge_point, roofline_seconds

T, GB = 1e12, 1e9


def _printed(value: float, printed: float, digits: int = 0) -> bool:
    """``value`` rounds to ``printed`` at the printed number of decimals."""
    return round(value, digits) == printed


# (key, precision, figure printed on the vendor's sheet in TFLOP/s, printed with sparsity?, decimals)
SHEET_FLOPS = [
    # NVIDIA V100 whitepaper, Table 1 (V100 SXM2, 1,530 MHz boost): 15.7 FP32, 7.8 FP64, 125 tensor
    ("V100", "fp32", 15.7, False, 1), ("V100", "fp64", 7.8, False, 1), ("V100", "fp16_tensor", 125, False, 0),
    # NVIDIA A100 data sheet: 9.7 | 19.5 | 19.5 | TF32 156 | 312* | BF16 312 | 624* | INT8 624 | 1,248*
    ("A100", "fp64", 9.7, False, 1), ("A100", "fp64_tensor", 19.5, False, 1), ("A100", "tf32_tensor", 312, True, 0),
    ("A100", "bf16_tensor", 624, True, 0), ("A100", "int8_tensor", 1248, True, 0),
    ("A100-40GB", "bf16_tensor", 312, False, 0),
    # NVIDIA H100 data sheet, SXM: FP64 34, FP64 TC 67, FP32 67, TF32 989*, BF16 1,979*, FP8 3,958*
    ("H100", "fp64", 34, False, 0), ("H100", "fp64_tensor", 67, False, 0), ("H100", "fp32", 67, False, 0),
    ("H100", "tf32_tensor", 989, True, 0), ("H100", "bf16_tensor", 1979, True, 0),
    ("H100", "fp8_tensor", 3958, True, 0), ("H100", "int8_tensor", 3958, True, 0),
    # same sheet, PCIe: FP64 26, FP64 TC 51, FP32 51, TF32 756*, BF16 1,513*, FP8 3,026*
    ("H100-PCIe", "fp64", 26, False, 0), ("H100-PCIe", "fp32", 51, False, 0),
    ("H100-PCIe", "tf32_tensor", 756, True, 0), ("H100-PCIe", "bf16_tensor", 1513, True, 0),
    ("H100-PCIe", "fp8_tensor", 3026, True, 0),
    # NVIDIA H200 page: FP64 34, FP32 67, BF16 1,979*, FP8 3,958*
    ("H200", "fp64", 34, False, 0), ("H200", "bf16_tensor", 1979, True, 0), ("H200", "fp8_tensor", 3958, True, 0),
    # NVIDIA Blackwell data sheet, HGX B200 per GPU: BF16 4.5 PFLOP/s*, FP8 9*, TF32 2.2*, FP64 37
    ("B200", "bf16_tensor", 4500, True, 0), ("B200", "fp8_tensor", 9000, True, 0),
    ("B200", "tf32_tensor", 2200, True, 0), ("B200", "fp64", 37, False, 0),
    # AMD ROCm docs, MI300X peak table (dense): 81.7 vector FP64, 163.4 matrix FP64 and FP32,
    # 653.7 TF32, 1307.4 FP16/BF16, 2614.9 FP8/INT8
    ("MI300X", "fp64", 81.7, False, 1), ("MI300X", "fp64_tensor", 163.4, False, 1),
    ("MI300X", "fp32", 163.4, False, 1), ("MI300X", "tf32_tensor", 653.7, False, 1),
    ("MI300X", "bf16_tensor", 1307.4, False, 1), ("MI300X", "fp8_tensor", 2614.9, False, 1),
    # Google Cloud TPU docs: v5e 197 TFLOP/s BF16, 393 TOPS INT8; v5p 459 BF16
    ("TPU-v5e", "bf16_tensor", 197, False, 0), ("TPU-v5e", "int8_tensor", 393, False, 0),
    ("TPU-v5p", "bf16_tensor", 459, False, 0),
]


@pytest.mark.parametrize("key, precision, printed, sparse, digits", SHEET_FLOPS)
def test_dense_peak_matches_the_printed_figure(key, precision, printed, sparse, digits):
    value = gpu_peak_flops(key, precision) / T
    if sparse:  # the sheet rounds the sparse value, the table the dense half: one unit apart at most
        assert abs(2 * value - printed) <= 10**-digits, (key, precision, value)
    else:
        assert _printed(value, printed, digits), (key, precision, value)


# (key, memory printed in GB, bandwidth printed in GB/s, scale-up printed in GB/s both directions)
SHEET_MEMORY = [
    ("V100", 32, 900, 300),  # V100 data sheet: 32/16 GB HBM2, 900 GB/s, NVLink 300 GB/s
    ("A100-40GB", 40, 1555, 600),  # A100 data sheet: 40 GB HBM2 1,555 GB/s; NVLink 600 GB/s
    ("A100", 80, 2039, 600),  # 80 GB HBM2e 2,039 GB/s
    ("H100", 80, 3350, 900),  # H100 SXM: 80 GB, 3.35 TB/s, NVLink 900 GB/s
    ("H100-PCIe", 80, 2000, 600),  # H100 PCIe: 80 GB, 2 TB/s, NVLink bridge 600 GB/s
    ("H200", 141, 4800, 900),  # H200: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s
    ("B200", 180, 7700, 1800),  # HGX B200: 180 GB HBM3e, 7.7 TB/s, NVLink 1.8 TB/s per GPU
    ("MI300X", 192, 5300, 896),  # MI300X: 192 GB HBM3, 5.3 TB/s; 7 x 128 GB/s Infinity Fabric links
    ("TPU-v5e", 16, 819, 400),  # v5e: 16 GB, 819 GBps; ICI 400 GBps per chip, bidirectional
    ("TPU-v5p", 95, 2765, 1200),  # v5p: 95 GB, 2765 GBps; ICI 1200 GBps per chip, bidirectional
]


@pytest.mark.parametrize("key, memory, bandwidth, link", SHEET_MEMORY)
def test_memory_and_links_match_the_printed_figures(key, memory, bandwidth, link):
    spec = GPUS[key]
    assert spec.memory_bytes == memory * GB
    assert spec.memory_bandwidth == pytest.approx(bandwidth * GB, rel=1e-12)
    assert 2 * spec.scale_up.bandwidth == pytest.approx(link * GB, rel=1e-12)  # stored per direction
    assert spec.scale_up.latency > 0 and spec.scale_out.bandwidth < spec.scale_up.bandwidth
    assert spec.source and spec.domain_size >= 2


def test_every_source_is_in_the_bibliography():
    from pathlib import Path

    bib = (Path(__file__).resolve().parent.parent / "references.bib").read_text()
    for spec in GPUS.values():
        assert f"{{{spec.source}," in bib, spec.source


def test_every_precision_is_known_and_tensor_rates_exceed_vector_ones():
    for spec in GPUS.values():
        assert set(spec.peak_flops) <= set(GPU_PRECISIONS)
        if "fp32" in spec.peak_flops and "bf16_tensor" in spec.peak_flops:
            assert spec.peak_flops["bf16_tensor"] > spec.peak_flops["fp32"]


def test_ridge_points():
    # kipply (2022) divides the A100's 312e12 FLOP/s by 1.5e12 B/s and prints "a distinct ratio
    # here of 208"; with the 40 GB part's data-sheet 1,555 GB/s the ridge is a little lower
    assert 312e12 / 1.5e12 == 208
    assert ridge_point("A100-40GB") == pytest.approx(312 / 1.555)
    # How to Scale Your Model, part 1: "For the TPU v5e MXU, this is about 240 FLOPs/byte"
    assert round(ridge_point("TPU-v5e")) == 241 and 1.97e14 / 8.2e11 == pytest.approx(240.2, abs=0.1)
    assert ridge_point("H100", "fp8_tensor") == pytest.approx(2 * ridge_point("H100"), rel=1e-4)


def test_roofline_seconds_is_the_slower_of_the_two():
    peak, bw = GPUS["H100"].peak_flops["bf16_tensor"], GPUS["H100"].memory_bandwidth
    assert roofline_seconds(2e12, 1e9, "H100") == pytest.approx(2e12 / peak)
    assert roofline_seconds(1e9, 1e12, "H100") == pytest.approx(1e12 / bw)
    i = ridge_point("H100")
    assert roofline_seconds(i * 1e9, 1e9, "H100") == pytest.approx(1e9 / bw)  # both equal at the ridge
    assert roofline_seconds(0, 0, "H100") == 0


def test_aliases_and_accelerator_objects():
    assert accelerator("h100-sxm") is GPUS["H100"] and accelerator("mi300x") is GPUS["MI300X"]
    assert accelerator(" a100 ") is GPUS["A100"]
    assert accelerator(GPUS["B200"]) is GPUS["B200"]
    assert llmmath.GPUSpec is llmmath.Accelerator


def test_h800_is_an_h100_with_the_export_limited_nvlink():
    """Zhao et al. (2025), section 4.1: the H800 SXM is 'built on the Hopper architecture, similar to
    the H100 GPU' with 'reduced FP64 computational performance and NVLink bandwidth', 'reduced from
    900 GB/s to 400 GB/s'; DeepSeek-V3's report, section 3.2.2: 'NVLink offers a bandwidth of 160 GB/s,
    roughly 3.2 times that of IB (50 GB/s)' (achieved, below the per-direction 200)."""
    h800, h100 = GPUS["H800"], GPUS["H100"]
    assert accelerator("h800") is h800 and accelerator("H800-SXM") is h800  # no longer an H100 alias
    assert 2 * h800.scale_up.bandwidth == 400 * GB and 2 * h100.scale_up.bandwidth == 900 * GB
    assert 160 * GB < h800.scale_up.bandwidth and h800.scale_out.bandwidth == 400e9 / 8 == 50 * GB
    for precision in ("tf32_tensor", "bf16_tensor", "fp8_tensor"):  # 1,979 BF16 and 3,958 FP8 with sparsity
        assert gpu_peak_flops("H800", precision) == gpu_peak_flops("H100", precision)
    assert abs(2 * gpu_peak_flops("H800") / T - 1979) <= 1
    with pytest.raises(ValueError, match="precision must be one of"):
        gpu_peak_flops("H800", "fp64")
    assert h800.memory_bytes == h100.memory_bytes and h800.domain_size == 8


def test_bad_input_names_the_argument_and_lists_the_choices():
    with pytest.raises(ValueError, match=r"gpu must be one of V100, A100-40GB, .*TPU-v5p; got 'B300'"):
        accelerator("B300")
    with pytest.raises(TypeError, match="gpu must be an accelerator name"):
        accelerator(3)
    with pytest.raises(ValueError, match=r"precision must be one of fp64, fp32, fp16_tensor; got 'bf16_tensor'"):
        gpu_peak_flops("V100", "bf16_tensor")
    with pytest.raises(ValueError, match="flops must be >= 0"):
        roofline_seconds(-1, 0, "H100")
    with pytest.raises(ValueError, match="bytes_moved must be finite"):
        roofline_seconds(1, math.inf, "H100")


def test_arithmetic_intensity_counts_each_operand_once():
    import sympy as sp

    m, n, p, beta = sp.symbols("m n p beta", positive=True)
    formula = 2 * m * n * p / ((m * n + n * p + m * p) * beta)
    for shape, b in [((1, 8192, 8192), 2), ((512, 4096, 11008), 1), ((3, 5, 7), 0.5)]:
        moved = (shape[0] * shape[1] + shape[1] * shape[2] + shape[0] * shape[2]) * b  # A, B read; C written
        assert llmmath.arithmetic_intensity(*shape, b) == pytest.approx(2 * math.prod(shape) / moved)
        assert llmmath.arithmetic_intensity(*shape, b) == pytest.approx(
            float(formula.subs(dict(zip((m, n, p, beta), (*shape, b), strict=True)))))
    with pytest.raises(ValueError, match="bytes_per_value must be > 0"):
        llmmath.arithmetic_intensity(2, 3, 4, 0)
    with pytest.raises(ValueError, match="m must be an integer >= 1"):
        llmmath.arithmetic_intensity(0, 3, 4)


def test_measured_bandwidth_and_rectangular_rates_are_positive():
    assert llmmath.measure_memory_bandwidth(2**16, repeats=1) > 0
    assert llmmath.measure_matmul_flops_per_second(8, repeats=1, m=1, p=3, dtype="float32") > 0
    with pytest.raises(ValueError, match="n_bytes must be an integer >= 8"):
        llmmath.measure_memory_bandwidth(4)
    with pytest.raises(ValueError, match="dtype must be one of float32, float64"):
        llmmath.measure_matmul_flops_per_second(8, dtype="int8")
