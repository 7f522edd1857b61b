"""Argument validation shared by every public function of llmmath.

Each helper raises ``TypeError`` for a wrong type and ``ValueError`` for a wrong value, and the
message always names the argument and the accepted range, e.g.
``ValueError: batch must be an integer >= 1, got 0``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = [
    "check_int",
    "check_positive",
    "check_fraction",
    "check_choice",
    "check_bool",
    "check_array_positive",
    "check_array",
    "check_matrix",
]


def check_int(name: str, value: Any, *, minimum: int | None = 1, maximum: int | None = None) -> int:
    """Return ``value`` as a Python ``int`` if it is an integer in ``[minimum, maximum]``.

    Booleans and floats (even integral ones such as ``3.0``) are rejected with ``TypeError``:
    a dimension is a count, and a silent conversion would hide a bug.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        upper = f" and <= {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be an integer <= {maximum}, got {value}")
    return value


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float if it is a finite real number > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_fraction(name: str, value: Any, *, low_open: bool = True, high_open: bool = False) -> float:
    """Return ``value`` if it lies in the unit interval; by default ``(0, 1]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    too_low = value <= 0 if low_open else value < 0
    too_high = value >= 1 if high_open else value > 1
    if not np.isfinite(value) or too_low or too_high:
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (strings); the error lists the accepted values."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {', '.join(choices)}; got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a ``bool``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_array_positive(name: str, value: Any) -> np.ndarray:
    """Return ``value`` as a float ndarray if every element is finite and > 0 (scalars accepted)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}") from exc
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be finite and > 0 everywhere, got {value!r}")
    return arr


def check_array(name: str, value: Any, *, min_ndim: int = 1, finite: bool = True, what: str = "an array") -> np.ndarray:
    """Return ``value`` as a non-empty float ndarray with at least ``min_ndim`` axes (and only finite
    numbers, unless ``finite=False``). Not an array, list or tuple, or non-numbers: ``TypeError``;
    too few axes, empty or not finite: ``ValueError``."""
    if not isinstance(value, (np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be {what} (numpy array or nested list), got {type(value).__name__}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be {what} of real numbers, got {value!r}") from exc
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite everywhere")
    return arr


def check_matrix(name: str, value: Any, *, cols: int | None = None) -> np.ndarray:
    """Return ``value`` as a non-empty 2-D float ndarray (with ``cols`` columns if given):
    :func:`check_array` with exactly two axes."""
    arr = check_array(name, value, finite=False, what="a 2-D array")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {arr.shape}")
    if cols is not None and arr.shape[1] != cols:
        raise ValueError(f"{name} must have shape (batch >= 1, {cols}), got {arr.shape}")
    return arr
