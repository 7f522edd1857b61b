"""Byte units and number formats: every memory formula of llmmath takes and returns **bytes**.

Decimal units (``GB = 10^9`` bytes, what GPU data sheets and disk vendors print) and binary units
(``GiB = 2^30`` bytes, what ``nvidia-smi`` and most operating systems report) differ by 7.4 % at
this scale; the helpers here convert explicitly and never guess. Derived in chapter
:doc:`/chapters/memory`.
"""

from __future__ import annotations

import math
import numbers

from ._validate import check_choice, check_int, check_positive

__all__ = [
    "KB",
    "MB",
    "GB",
    "TB",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "UNITS",
    "DTYPES",
    "DTYPE_BITS",
    "dtype_bits",
    "bytes_for",
    "to_unit",
    "to_gb",
    "to_gib",
    "format_bytes",
]

#: Bytes in a kilobyte, megabyte, gigabyte and terabyte (decimal SI prefixes: powers of 1000).
KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
#: Bytes in a kibibyte, mebibyte, gibibyte and tebibyte (binary IEC prefixes: powers of 1024).
KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40

#: Unit name -> bytes in one unit (decimal SI prefixes and binary IEC prefixes).
UNITS: dict[str, int] = {
    "B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}

#: Number formats and their width in bits.
DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
DTYPES: tuple[str, ...] = tuple(DTYPE_BITS)


def dtype_bits(dtype: str) -> int:
    """Bits per value of ``dtype``: fp32 32, fp16 16, bf16 16, fp8 8, int8 8, int4 4.

    Ignores the per-block scales that real fp8/int8/int4 quantization schemes add.
    Derived in chapter :doc:`/chapters/memory`.
    """
    return DTYPE_BITS[check_choice("dtype", dtype, DTYPES)]


def bytes_for(n_values: int, dtype: str) -> int:
    """Bytes to store ``n_values`` numbers of ``dtype``: ``ceil(n_values * bits / 8)``.

    Sub-byte formats (int4) pack two values per byte; an odd count rounds up to a whole byte.
    Derived in chapter :doc:`/chapters/memory`.
    """
    n_values = check_int("n_values", n_values, minimum=0)
    return -(-n_values * dtype_bits(dtype) // 8)


def to_unit(n_bytes: float, unit: str) -> float:
    """``n_bytes`` expressed in ``unit`` (one of :data:`UNITS`): ``n_bytes / UNITS[unit]``.

    Derived in chapter :doc:`/chapters/memory`.
    """
    if isinstance(n_bytes, numbers.Integral) and not isinstance(n_bytes, bool):
        n_bytes = check_int("n_bytes", n_bytes, minimum=0)
    else:
        n_bytes = check_positive("n_bytes", n_bytes, allow_zero=True)
    return n_bytes / UNITS[check_choice("unit", unit, tuple(UNITS))]


def to_gb(n_bytes: float) -> float:
    """Decimal gigabytes: ``n_bytes / 10^9``. Derived in chapter :doc:`/chapters/memory`."""
    return to_unit(n_bytes, "GB")


def to_gib(n_bytes: float) -> float:
    """Binary gibibytes: ``n_bytes / 2^30``. Derived in chapter :doc:`/chapters/memory`."""
    return to_unit(n_bytes, "GiB")


def format_bytes(n_bytes: float, unit: str = "GB", digits: int = 1) -> str:
    """``n_bytes`` as text in an explicit unit, e.g. ``format_bytes(14e9, "GiB") == "13.0 GiB"``.

    ``digits`` decimals, rounded half to even as Python's ``format`` does.
    Derived in chapter :doc:`/chapters/memory`.
    """
    digits = check_int("digits", digits, minimum=0, maximum=12)
    value = to_unit(n_bytes, unit)
    if not math.isfinite(value):  # pragma: no cover - to_unit rejects non-finite input
        raise ValueError(f"n_bytes must be finite, got {n_bytes}")
    return f"{value:,.{digits}f} {unit}"
