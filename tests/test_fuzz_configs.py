"""Differential fuzz test of the config boundary (issue 24).

Every shipped ``llmmath/hf_configs/*.json``, the published fields of every preset and the tiny
configuration of every family and variant in ``hf_reference.CASES`` are mutated one field at a
time (the field dropped, set to 0, negative, a float, a string, null, NaN, 10**30, or a boolean
written as a string). Each mutant must be

- refused cleanly: ``ValueError`` or ``TypeError`` from :func:`llmmath.from_hf_config`, one line
  naming the key as the file spells it (through the command line: exit status 2, one line on
  stderr naming it); or
- read: then either llmmath's count is the unmutated config's (a key llmmath does not read, or a
  value with the same meaning), or the mutant describes another model, and ``transformers`` 5.23
  must build that model with exactly llmmath's parameter count (the model built on the ``meta``
  device by ``hf_reference.hf_model``).

No mutant may raise anything else or hang (each sweep runs under a deadline). The comparisons
with transformers are all of the shipped configs' mutants that change the count and a
derandomized hypothesis sample of the others (constructions cached), to keep the file at a few
seconds.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmmath import from_hf_config, param_count
from llmmath.cli import main
from llmmath.presets import _RAW, _ZOO

hf_reference = pytest.importorskip("hf_reference")

HF_CONFIGS = Path(__file__).resolve().parent.parent / "llmmath" / "hf_configs"

#: The configurations mutated: name -> config.json dict.
SHIPPED = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(HF_CONFIGS.glob("*.json"))}
PUBLISHED = {name: raw for name, (raw, _) in {**_RAW, **_ZOO}.items() if isinstance(raw, dict)}
TINY = dict(hf_reference.CASES)

_DROP = object()
KINDS = ("drop", "zero", "negative", "float", "string", "null", "nan", "huge", "bool-as-string")


def _mutated_values(value: Any) -> dict[str, Any]:
    """The nine mutations of one value (a number's string is the number typed as text)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {
        "drop": _DROP, "zero": 0, "negative": -value if number and value else -1,
        "float": value + 0.5 if number else 1.5, "string": str(value) if number else "x", "null": None,
        "nan": math.nan, "huge": 10**30,
        "bool-as-string": "False" if value is True else "True" if value is False else "true",
    }


def _paths(d: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every key of ``d`` and of a nested ``text_config`` (the gemma3 file), with its value."""
    for key, value in d.items():
        yield (key,), value
        if key == "text_config" and isinstance(value, dict):
            for inner, v in value.items():
                yield (key, inner), v


def _mutate(d: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``d`` with the key at ``path`` changed (copies along the path only: the readers
    never write into a config)."""
    d = dict(d)
    if len(path) == 2:
        d[path[0]] = _mutate(d[path[0]], path[1:], value)
    elif value is _DROP:
        del d[path[0]]
    else:
        d[path[0]] = value
    return d


class Mutant:
    """One mutated config: where it comes from, what llmmath says (``error`` or ``count``)."""

    def __init__(self, source: str, name: str, path: tuple[str, ...], kind: str, d: dict[str, Any]) -> None:
        self.source, self.name, self.path, self.kind, self.d = source, name, path, kind, d
        self.key = path[-1]
        self.error: BaseException | None = None
        self.count: int | None = None

    def __repr__(self) -> str:
        return f"{self.name}: {'.'.join(self.path)} {self.kind}"


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (10**30 layers used to hang three readers)."""
    def expire(*_: Any) -> None:
        raise TimeoutError(f"no answer within {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@functools.cache
def _sweep() -> tuple[dict[str, int], list[Mutant]]:
    """Every mutant of every configuration, read by llmmath (a few tenths of a second)."""
    bases: dict[str, int] = {}
    mutants: list[Mutant] = []
    with _deadline(30):
        for source, configs in (("shipped", SHIPPED), ("published", PUBLISHED), ("tiny", TINY)):
            for name, d in configs.items():
                bases[name] = param_count(from_hf_config(d))
                for path, value in _paths(d):
                    for kind, new in _mutated_values(value).items():
                        m = Mutant(source, name, path, kind, _mutate(d, path, new))
                        try:
                            m.count = param_count(from_hf_config(m.d))
                        except (ValueError, TypeError) as exc:  # anything else fails the test
                            m.error = exc
                        mutants.append(m)
    return bases, mutants


def _changed(source: str | None = None) -> list[Mutant]:
    """The mutants llmmath reads as another model than the unmutated config."""
    bases, mutants = _sweep()
    return [m for m in mutants if m.error is None and m.count != bases[m.name] and source in (None, m.source)]


def _unchanged() -> list[Mutant]:
    bases, mutants = _sweep()
    return [m for m in mutants if m.error is None and m.count == bases[m.name]]


@functools.cache
def _transformers_count(text: str) -> int | None:
    """Parameters of the transformers model of a config (JSON text, so that it can be cached),
    or None when transformers refuses the configuration or fails to build the model."""
    d = json.loads(text)
    if d["model_type"] == "gemma3":  # llmmath reads its text_config as gemma3_text
        d = {**d["text_config"], "model_type": "gemma3_text"}
    try:
        total = sum(p.numel() for p in hf_reference.hf_model(d).parameters())
    except Exception:  # noqa: BLE001 - any refusal of transformers' counts as "does not build"
        return None
    if d["model_type"] == "t5" and d.get("tie_word_embeddings") is False:
        # transformers 5.23's T5Config ties the LM head whatever the file says (tests/test_presets.py,
        # _untied_t5_head); the checkpoint, and llmmath, keep it separate: V d_model more
        config = hf_reference.hf_config(d)
        total += config.vocab_size * config.d_model
    return total


def _assert_same_as_transformers(m: Mutant) -> None:
    want = _transformers_count(json.dumps(m.d, sort_keys=True))
    assert want is not None, f"{m}: llmmath reads it as a model of {m.count:,} parameters; transformers refuses it"
    assert m.count == want, f"{m}: llmmath {m.count:,} parameters, transformers {want:,}"


def test_every_mutant_is_refused_naming_the_key_or_read() -> None:
    bases, mutants = _sweep()
    refused = [m for m in mutants if m.error is not None]
    for m in refused:
        message = str(m.error)
        assert m.key in message, f"{m}: the message does not name {m.key!r}: {message}"
        assert "\n" not in message, f"{m}: not one line: {message!r}"
    # every kind of mutation is refused somewhere, and some mutants are read (the sweep sees both)
    assert {m.kind for m in refused} == set(KINDS)
    assert len(refused) > len(mutants) / 2 and _changed() and _unchanged()
    assert set(bases) == set(SHIPPED) | set(PUBLISHED) | set(TINY)


def test_shipped_mutants_that_change_the_model_match_transformers() -> None:
    """All of them: DeepSeek-V3 without dense layers, shared experts or a query latent, Qwen3-MoE
    with dense MLPs or without its head_dim, Gemma 3 with the default intermediate_size."""
    changed = _changed("shipped")
    assert {(m.name, m.key, m.kind) for m in changed} >= {("deepseek-v3", "first_k_dense_replace", "zero"),
                                                          ("qwen3-30b-a3b", "num_experts", "zero")}
    for m in changed:
        _assert_same_as_transformers(m)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_other_mutants_that_change_the_model_match_transformers(data: st.DataObject) -> None:
    _assert_same_as_transformers(data.draw(st.sampled_from(_changed("published") + _changed("tiny"))))


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_mutants_llmmath_reads_as_the_same_model_are_the_same_model_in_transformers(data: st.DataObject) -> None:
    """A mutated key llmmath ignores (or reads with the same meaning) is the same model in
    transformers too, when transformers builds it (it refuses most of them, e.g. a string
    rms_norm_eps)."""
    m = data.draw(st.sampled_from(_unchanged()))
    want = _transformers_count(json.dumps(m.d, sort_keys=True))
    if want is not None:
        assert m.count == want, f"{m}: llmmath {m.count:,} parameters, transformers {want:,}"


def test_the_command_line_refuses_every_shipped_mutant_in_one_line(tmp_path: Path, capsys: Any) -> None:
    """Through ``python -m llmmath FILE`` (4 ms a call): every sixth refused mutant exits 2 with
    one line on stderr naming the key, every sixteenth read one prints a summary (exit 0)."""
    _, mutants = _sweep()
    refused = [m for m in mutants if m.source == "shipped" and m.error is not None][::6]
    read = [m for m in mutants if m.source == "shipped" and m.error is None][::16]
    path = tmp_path / "config.json"
    with _deadline(30):
        for m in refused + read:
            path.write_text(json.dumps(m.d), encoding="utf-8")
            status = main([str(path)])
            out, err = capsys.readouterr()
            if m.error is None:
                assert status == 0 and not err, f"{m}: {err}"
            else:
                assert status == 2 and not out, m
                assert err.startswith("error: ") and err.count("\n") == 1 and m.key in err, f"{m}: {err!r}"
