"""Every published constant llmmath stores, pinned to the figure its source prints (issue 33).

One test per source (a paper's table or equation, a vendor's data sheet or architecture page). The
expected values are typed here from the source, as printed, with where they stand in a comment;
none is computed by llmmath. A change to a stored constant must be a deliberate correction with
its source, and then the literal here changes with it.

Where the figures were read (the sources themselves or verbatim transcriptions of them): the papers
in their arXiv text (Kaplan et al. 2001.08361; Hoffmann et al. 2203.15556; Brown et al. 2005.14165;
Touvron et al. 2302.13971), Besiroglu et al.'s values in their paper (2404.10102 v2, Table 1) and in
the notebook of their repository (epoch-research/analyzing-chinchilla, data_analysis.ipynb),
Muennighoff et al.'s fit in the README of huggingface/datablations, Sardana et al.'s coefficients in
the README of their code, AMD's MI300X table in the ROCm documentation source
(docs/conceptual/gpu-arch/mi300.md), Google's TPU v5e/v5p pages, NVIDIA's data sheets and
whitepapers (A100 data sheet, H100 whitepaper Table 3, Blackwell data sheet).
"""

from __future__ import annotations

import math

import pytest

from llmmath.hardware import GPUS
from llmmath.params import QUOTED_SIZES
from llmmath.presets import PRESETS
from llmmath.scaling import (
    BESIROGLU_2024,
    CHINCHILLA_TABLE3,
    HOFFMANN_2022,
    HOFFMANN_2022_UNROUNDED,
    HOFFMANN_FIT_GRID,
    KAPLAN_2020,
    MUENNIGHOFF_2023,
    SARDANA_2024,
    TRAINING_RUNS,
)

T, GB = 1e12, 1e9


def _law(law) -> tuple[float, float, float, float, float]:
    return law.E, law.A, law.B, law.alpha, law.beta


# ---- scaling-law fits ------------------------------------------------------------------------------


def test_hoffmann_2022_approach3_appendix_d2():
    """Hoffmann et al. (2022), Appendix D.2, eq. (10): "L(N, D) = E + A/N^0.34 + B/D^0.28 with
    E = 1.69, A = 406.4, B = 410.7", and the grid of initialisations of the fit (same section):
    alpha, beta in {0, 0.5, ..., 2}, e in {-1, -0.5, ..., 1}, a, b in {0, 5, ..., 25}."""
    assert _law(HOFFMANN_2022) == (1.69, 406.4, 410.7, 0.34, 0.28)
    a_b = (0.0, 5.0, 10.0, 15.0, 20.0, 25.0)
    exps = (0.0, 0.5, 1.0, 1.5, 2.0)
    assert HOFFMANN_FIT_GRID == (a_b, a_b, (-1.0, -0.5, 0.0, 0.5, 1.0), exps, exps)


def test_hoffmann_2022_unrounded_from_the_tex_source():
    """The unrounded fit of Hoffmann et al.'s TeX source, as Besiroglu et al. (2024) report it:
    their notebook's ``true_params`` are (a, b, e, alpha, beta) = (6.0073404, 6.0179186, 0.5267228,
    0.33917084, 0.2849083), A = e^a, B = e^b, E = e^e. llmmath stores E, alpha, beta at four
    decimals (1.6934, 0.3392, 0.2849) and A, B as printed (406.4, 410.7)."""
    assert _law(HOFFMANN_2022_UNROUNDED) == (1.6934, 406.4, 410.7, 0.3392, 0.2849)
    a, b, e, alpha, beta = 6.0073404, 6.0179186, 0.5267228, 0.33917084, 0.2849083
    assert (round(math.exp(e), 4), round(alpha, 4), round(beta, 4)) == (1.6934, 0.3392, 0.2849)
    assert (round(math.exp(a), 1), round(math.exp(b), 1)) == (406.4, 410.7)


def test_hoffmann_2022_table3():
    """Hoffmann et al. (2022), Table 3 (approach 1): parameters, FLOPs, tokens, as printed
    ("400 Million | 1.92e+19 | 8.0 Billion", ..., "10 Trillion | 1.30e+28 | 216.2 Trillion")."""
    assert CHINCHILLA_TABLE3 == (
        (400e6, 1.92e19, 8.0e9), (1e9, 1.21e20, 20.2e9), (10e9, 1.23e22, 205.1e9),
        (67e9, 5.76e23, 1.5e12), (175e9, 3.85e24, 3.7e12), (280e9, 9.90e24, 5.9e12),
        (520e9, 3.43e25, 11.0e12), (1e12, 1.27e26, 21.2e12), (10e12, 1.30e28, 216.2e12),
    )


def test_besiroglu_2024_refit():
    """Besiroglu et al. (2024), Table 1 (arXiv 2404.10102 v2): E = 1.8172 (0.03), A = 482.01
    (124.58), B = 2085.43 (1293.23), alpha = 0.3478 (0.02), beta = 0.3658 (0.02). (The final run in
    their repository's notebook prints A 482.00572, B 2085.43420, alpha 0.34781: the same at the
    paper's digits; E 1.81686 and beta 0.36585 differ in the fourth decimal.)"""
    assert _law(BESIROGLU_2024) == (1.8172, 482.01, 2085.43, 0.3478, 0.3658)


def test_kaplan_2020_tables_2_3_5_6():
    """Kaplan et al. (2020). Eqs. (1.1)-(1.3) and Table 5: alpha_N = 0.076, N_c = 8.8e13,
    alpha_D = 0.095, D_c = 5.4e13, alpha_C^min = 0.050, C_c^min = 3.1e8 PF-days, alpha_B = 0.21,
    B_* = 2.1e8 tokens (eq. 1.4 rounds it to "2e8"), alpha_S = 0.76, S_c = 2.1e3 steps.
    Table 2 (the joint L(N, D)): alpha_N 0.076, alpha_D 0.103, N_c 6.4e13, D_c 1.8e13.
    Table 6: N_opt = 1.3e9 C^0.73, B = 2.0e6 C^0.24, S_min = 5.4e3 C^0.03, D_opt = 2e10 C^0.27."""
    k = KAPLAN_2020
    assert (k.alpha_n, k.n_c, k.alpha_d, k.d_c, k.alpha_c, k.c_c) == (0.076, 8.8e13, 0.095, 5.4e13, 0.050, 3.1e8)
    assert (k.b_star, k.alpha_b, k.s_c, k.alpha_s) == (2.1e8, 0.21, 2.1e3, 0.76)
    assert (k.joint_alpha_n, k.joint_alpha_d, k.joint_n_c, k.joint_d_c) == (0.076, 0.103, 6.4e13, 1.8e13)
    assert (k.opt_n_coef, k.opt_n_exp, k.opt_b_coef, k.opt_b_exp) == (1.3e9, 0.73, 2.0e6, 0.24)
    assert (k.opt_s_coef, k.opt_s_exp, k.opt_d_coef, k.opt_d_exp) == (5.4e3, 0.03, 2e10, 0.27)


def test_muennighoff_2023_appendix_a():
    """Muennighoff et al. (2023), Appendix A, and the parametric fit printed in the README of
    huggingface/datablations: (a, b, e, alpha, beta, R_D*, R_N*) = (6.255414, 7.3049974, 0.6254804,
    0.3526596, 0.3526596, 15.387756, 5.309743), A = e^a, B = e^b, E = e^e."""
    law = MUENNIGHOFF_2023
    assert (law.r_d_star, law.r_n_star) == (15.387756, 5.309743)
    c = law.law
    assert (c.alpha, c.beta) == (0.3526596, 0.3526596)
    assert (math.log(c.A), math.log(c.B), math.log(c.E)) == (
        pytest.approx(6.255414, abs=1e-12), pytest.approx(7.3049974, abs=1e-12), pytest.approx(0.6254804, abs=1e-12))
    # printed rounded in the paper as A = 521, B = 1488, E = 1.87
    assert (round(c.A), round(c.B), round(c.E, 2)) == (521, 1488, 1.87)


def test_sardana_2024_coefficients():
    """Sardana et al. (2024), the README of their repository ("Beyond Chinchilla-Optimal"): "By
    default, all scripts in this repo assume the original coefficients from the Chinchilla paper:
    alpha=0.336, beta=0.283, A=406.4, B=410.7, E=1.69"."""
    assert _law(SARDANA_2024) == (1.69, 406.4, 410.7, 0.336, 0.283)


# ---- training runs and model tables ------------------------------------------------------------------


def test_training_tokens_of_the_published_runs():
    """Tokens of the runs in TRAINING_RUNS, as printed: Brown et al. (2020), Table 2.1 caption
    ("All models were trained for a total of 300 billion tokens"); Hoffmann et al. (2022), Table 1
    (Gopher 280 Billion / 300 Billion; Chinchilla 70 Billion / 1.4 Trillion); Touvron et al.
    (2023a), Table 2 (1.0T, 1.0T, 1.4T, 1.4T); Touvron et al. (2023b), Table 1 (2.0T)."""
    tokens = {r.name: r.n_tokens for r in TRAINING_RUNS}
    for name in ("GPT-3 175B", "GPT-3 13B", "GPT-3 XL", "Gopher 280B"):
        assert tokens[name] == 300e9, name
    assert tokens["Chinchilla 70B"] == 1.4e12
    assert [tokens[f"LLaMA {s}"] for s in ("7B", "13B", "33B", "65B")] == [1.0e12, 1.0e12, 1.4e12, 1.4e12]
    assert [tokens[f"Llama 2 {s}"] for s in ("7B", "13B", "70B")] == [2.0e12] * 3
    n_params = {r.name: r.n_params for r in TRAINING_RUNS}
    assert (n_params["Gopher 280B"], n_params["Chinchilla 70B"]) == (280e9, 70e9)


def test_brown_2020_table_2_1_and_d_1():
    """Brown et al. (2020), Table 2.1: (n_layers, d_model, n_heads, d_head) of the eight GPT-3
    models, d_ff = 4 d_model, n_ctx = 2048; GPT-2's vocabulary of 50257. Two rows are stored
    corrected (see llmmath/presets.py and tests/test_params.py): 13B prints d_model 5140 (5120 is
    stored: 40 heads x 128) and XL prints 24 heads (16 are stored: 2048 / 128). Table D.1,
    "Params (M)": 125, 356, 760, 1,320, 2,650, 6,660, 12,850, 174,600."""
    printed = {  # Table 2.1 as printed
        "gpt3-small": (12, 768, 12, 64), "gpt3-medium": (24, 1024, 16, 64), "gpt3-large": (24, 1536, 16, 96),
        "gpt3-xl": (24, 2048, 24, 128), "gpt3-2.7b": (32, 2560, 32, 80), "gpt3-6.7b": (32, 4096, 32, 128),
        "gpt3-13b": (40, 5140, 40, 128), "gpt3-175b": (96, 12288, 96, 128),
    }
    corrected = {"gpt3-13b": (40, 5120, 40, 128), "gpt3-xl": (24, 2048, 16, 128)}
    for name, shape in printed.items():
        cfg = PRESETS[name]
        assert (cfg.n_layers, cfg.hidden_size, cfg.n_heads, cfg.head_dim) == corrected.get(name, shape), name
        assert (cfg.ffn_size, cfg.max_position, cfg.vocab_size) == (4 * cfg.hidden_size, 2048, 50257), name
    d1 = {"gpt3-small": 125, "gpt3-medium": 356, "gpt3-large": 760, "gpt3-xl": 1_320, "gpt3-2.7b": 2_650,
          "gpt3-6.7b": 6_660, "gpt3-13b": 12_850, "gpt3-175b": 174_600}
    for name, millions in d1.items():
        assert QUOTED_SIZES[name][0] == millions * 10**6, name


def test_touvron_2023a_table2():
    """Touvron et al. (2023a), Table 2: params 6.7B, 13.0B, 32.5B, 65.2B; dimension 4096, 5120,
    6656, 8192; n heads 32, 40, 52, 64; n layers 32, 40, 60, 80."""
    for name, (n, h, a, layers) in {
        "llama-7b": (6.7e9, 4096, 32, 32), "llama-13b": (13.0e9, 5120, 40, 40),
        "llama-33b": (32.5e9, 6656, 52, 60), "llama-65b": (65.2e9, 8192, 64, 80),
    }.items():
        cfg = PRESETS[name]
        assert (cfg.hidden_size, cfg.n_heads, cfg.n_layers) == (h, a, layers), name
        assert QUOTED_SIZES[name][0] == n, name


def test_radford_2019_table2():
    """Radford et al. (2019), Table 2: 117M, 345M, 762M, 1542M parameters; 12, 24, 36, 48 layers;
    d_model 768, 1024, 1280, 1600."""
    for name, (n, layers, h) in {
        "gpt2": (117e6, 12, 768), "gpt2-medium": (345e6, 24, 1024), "gpt2-large": (762e6, 36, 1280),
        "gpt2-xl": (1542e6, 48, 1600),
    }.items():
        cfg = PRESETS[name]
        assert (cfg.n_layers, cfg.hidden_size) == (layers, h), name
        assert QUOTED_SIZES[name][0] == n, name


# ---- accelerators ------------------------------------------------------------------------------------
# Each row: dense peak TFLOP/s by precision, memory GB, HBM GB/s, scale-up link GB/s per direction,
# scale-out GB/s per direction, scale-up domain size. Sparse headline figures are halved by hand
# in the comments; link figures printed "total" (both directions) are halved by hand.


def _spec(key: str) -> tuple[dict[str, float], float, float, float, float, int]:
    s = GPUS[key]
    return ({k: v / T for k, v in s.peak_flops.items()}, s.memory_bytes / GB, s.memory_bandwidth / GB,
            s.scale_up.bandwidth / GB, s.scale_out.bandwidth / GB, s.domain_size)


def _same(key: str, flops: dict[str, float], memory: float, hbm: float, up: float, out: float, domain: int):
    got = _spec(key)
    assert set(got[0]) == set(flops), (key, sorted(got[0]))
    for precision, value in flops.items():
        assert got[0][precision] == pytest.approx(value, rel=1e-12), (key, precision)
    assert got[1:] == pytest.approx((memory, hbm, up, out, domain), rel=1e-12), key


def test_nvidia_v100_whitepaper():
    """NVIDIA Tesla V100 whitepaper, Table 1 (SXM2, 1,530 MHz boost): 7.8 TFLOP/s FP64, 15.7 FP32,
    125 tensor (FP16 inputs); V100 SXM2 data sheet: 32 GB HBM2, 900 GB/s, NVLink 300 GB/s (total).
    (The early version of the whitepaper, at 1,455 MHz, prints 7.5, 15 and 120.) Network: one
    100 Gb/s EDR NIC per GPU (llmmath's stated assumption)."""
    _same("V100", {"fp64": 7.8, "fp32": 15.7, "fp16_tensor": 125}, 32, 900, 300 / 2, 100 / 8, 8)


def test_nvidia_a100_datasheet():
    """NVIDIA A100 data sheet (r4): FP64 9.7 | FP64 Tensor 19.5 | FP32 19.5 | TF32 156 (312*) |
    BF16 and FP16 312 (624*) | INT8 624 TOPS (1,248*), *with sparsity; 40 GB HBM2 1,555 GB/s;
    80 GB HBM2e 2,039 GB/s; NVLink 600 GB/s. DGX A100: eight 200 Gb/s HDR NICs, eight GPUs."""
    ampere = {"fp64": 9.7, "fp64_tensor": 19.5, "fp32": 19.5, "tf32_tensor": 156, "fp16_tensor": 312,
              "bf16_tensor": 312, "int8_tensor": 624}
    _same("A100-40GB", ampere, 40, 1555, 600 / 2, 200 / 8, 8)
    _same("A100", ampere, 80, 2039, 600 / 2, 200 / 8, 8)


# H100 whitepaper, Table 3 (H100 SXM5): FP64 33.5, FP64 Tensor 66.9, FP32 66.9, TF32 494.7/989.4,
# FP16 and BF16 989.4/1978.9, FP8 1978.9/3957.8, INT8 1978.9/3957.8 (dense/sparse).
HOPPER_SXM = {"fp64": 33.5, "fp64_tensor": 66.9, "fp32": 66.9, "tf32_tensor": 494.7, "fp16_tensor": 989.4,
              "bf16_tensor": 989.4, "fp8_tensor": 1978.9, "int8_tensor": 1978.9}


def test_nvidia_h100_whitepaper_table3_and_datasheet():
    """H100 SXM5: whitepaper Table 3 (above); data sheet: 80 GB, 3.35 TB/s, NVLink 900 GB/s; DGX H100:
    eight 400 Gb/s NDR NICs. H100 PCIe, whitepaper Table 3: FP64 25.6, FP64 Tensor 51.2, FP32 51.2,
    TF32 378, FP16/BF16 756, FP8/INT8 1,513 (dense); data sheet: 80 GB, 2 TB/s, NVLink bridge
    600 GB/s joining two cards."""
    _same("H100", HOPPER_SXM, 80, 3350, 900 / 2, 400 / 8, 8)
    pcie = {"fp64": 25.6, "fp64_tensor": 51.2, "fp32": 51.2, "tf32_tensor": 378, "fp16_tensor": 756,
            "bf16_tensor": 756, "fp8_tensor": 1513, "int8_tensor": 1513}
    _same("H100-PCIe", pcie, 80, 2000, 600 / 2, 400 / 8, 2)


def test_nvidia_h200_page():
    """NVIDIA H200 product page and data sheet: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s; the H100 SXM5's
    compute (the page prints the same sparse 1,979 TFLOP/s BF16 and 3,958 FP8)."""
    _same("H200", HOPPER_SXM, 141, 4800, 900 / 2, 400 / 8, 8)


def test_h800_zhao_2025_and_deepseek_v3():
    """Zhao et al. (2025), section 4.1: the H800 is the H100 SXM with "reduced FP64 computational
    performance and NVLink bandwidth", "reduced from 900 GB/s to 400 GB/s"; DeepSeek-V3's nodes:
    eight 400 Gb/s InfiniBand NICs ("IB (50 GB/s)"). FP64 is not stored."""
    no_fp64 = {k: v for k, v in HOPPER_SXM.items() if not k.startswith("fp64")}
    _same("H800", no_fp64, 80, 3350, 400 / 2, 400 / 8, 8)


def test_nvidia_blackwell_datasheet_hgx_b200():
    """NVIDIA Blackwell data sheet, HGX B200, per GPU: FP8 9 PFLOP/s*, INT8 9 POPS*, FP16/BF16
    4.5 PFLOP/s*, TF32 2.2 PFLOP/s*, FP64/FP64 Tensor 37 TFLOP/s (*with sparsity: dense is half);
    180 GB HBM3e, 7.7 TB/s; NVLink 1.8 TB/s (total). FP32 (75 TFLOP/s) is not stored."""
    blackwell = {"fp64": 37, "fp64_tensor": 37, "tf32_tensor": 1100, "fp16_tensor": 2250, "bf16_tensor": 2250,
                 "fp8_tensor": 4500, "int8_tensor": 4500}
    _same("B200", blackwell, 180, 7700, 1800 / 2, 400 / 8, 8)


def test_amd_mi300x_rocm_table():
    """AMD ROCm documentation, "Peak-performance capabilities of the MI300X": matrix FP64 163.4,
    vector FP64 81.7, matrix/vector FP32 163.4, TF32 653.7, matrix FP16 and BF16 1307.4, FP8 and INT8
    2614.9 (dense); "peak memory bandwidth ... 5.3 TB per second"; data sheet: 192 GB HBM3; seven
    Infinity Fabric links of 128 GB/s (64 each way) to the seven peers of an 8-GPU node."""
    mi300x = {"fp64": 81.7, "fp64_tensor": 163.4, "fp32": 163.4, "tf32_tensor": 653.7, "fp16_tensor": 1307.4,
              "bf16_tensor": 1307.4, "fp8_tensor": 2614.9, "int8_tensor": 2614.9}
    _same("MI300X", mi300x, 192, 5300, 7 * 64, 400 / 8, 8)


def test_google_tpu_v5e_page():
    """Google Cloud, TPU v5e: "Peak compute per chip (bf16) 197 TFLOPs", "(Int8) 393 TOPs", "16 GB,
    819 GBps", "Bidirectional inter-chip interconnect (ICI) bandwidth (per chip) 400 GBps", "ICI
    ports per chip 4", "TPU Pod size 256 chips", "Per-host NIC configuration 2 x 100 Gbps NIC",
    "Chips per host 8"."""
    _same("TPU-v5e", {"bf16_tensor": 197, "int8_tensor": 393}, 16, 819, 400 / 2, 2 * 100 / 8 / 8, 256)


def test_google_tpu_v5p_page():
    """Google Cloud, TPU v5p: "Peak compute per chip (BF16) 459", "HBM capacity per chip 95",
    "HBM bandwidth per chip (GBps) 2765", "Bidirectional ICI bandwidth per chip (GBps) 1200",
    "Data center network (DCN) bandwidth per chip (Gbps) 50", "8960 chips" per pod; INT8 918 TOPS
    from Google's announcement of v5p (December 2023)."""
    _same("TPU-v5p", {"bf16_tensor": 459, "int8_tensor": 918}, 95, 2765, 1200 / 2, 50 / 8, 8960)


def test_every_accelerator_is_pinned_above():
    assert set(GPUS) == {"V100", "A100-40GB", "A100", "H100", "H100-PCIe", "H800", "H200", "B200", "MI300X",
                         "TPU-v5e", "TPU-v5p"}
