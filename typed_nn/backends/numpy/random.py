"""numpy implementations of the random draws (``random``) and the dropout mask: one Philox
stream per draw, computed on the host (the GPU backend shares these and uploads the result,
so a GPU draw holds the CPU's numbers for the same state)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...devices import module_of
from ...ops.declare import implement
from ...tags import CPU

Array = Any
_WORD = 2**64 - 1


def philox(state: Array, stream: int) -> np.random.Generator:
    """The numbers of one draw from ``state`` ``[seed, counter]``: Philox keyed by
    ``(seed, stream)``, started at block ``counter * 2**64`` (the counter is the second word of
    Philox's 256-bit block counter), so each draw owns 2**64 blocks and two draws never share
    numbers (started at block ``counter``, draw ``c + 1`` would repeat draw ``c`` shifted by
    one block)."""
    seed, counter = (int(v) for v in state.tolist())
    key = np.array([seed & _WORD, stream & _WORD], np.uint64)
    start = np.array([0, counter & _WORD, 0, 0], np.uint64)
    return np.random.Generator(np.random.Philox(counter=start, key=key))


def _drawn(dtype: Any) -> Any:
    """The dtype numpy's generator draws in for ``dtype``: float32 for the 16-bit types (it
    draws float32 and float64 only; the values are rounded once, at the end)."""
    return np.dtype(np.float32) if dtype.itemsize == 2 else dtype


def _normal(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, mean: float, std: float
) -> Array:
    if _drawn(dtype) != dtype:
        return _normal(rng, shape, _drawn(dtype), mean, std).astype(dtype)
    out = np.asarray(rng.standard_normal(shape, dtype=dtype))
    if std != 1.0:
        out *= dtype.type(std)
    if mean != 0.0:
        out += dtype.type(mean)
    return out


def _uniform(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, low: float, high: float
) -> Array:
    if _drawn(dtype) != dtype:  # rounded to 16 bits, a value may reach high: kept below it
        out = _uniform(rng, shape, _drawn(dtype), low, high).astype(dtype)
        return np.minimum(out, np.nextafter(dtype.type(high), dtype.type(low)))
    out = np.asarray(rng.random(shape, dtype=dtype))
    if (low, high) != (0.0, 1.0):
        out *= dtype.type(high - low)
        out += dtype.type(low)
        # low + (high - low) * u can round up to high in float32: keep the interval half-open
        np.minimum(out, np.nextafter(dtype.type(high), dtype.type(low)), out=out)
    return out


def _bernoulli(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, p: float) -> Array:
    return (rng.random(shape, dtype=np.float32) < p).astype(dtype)


def _randint(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, low: int, high: int
) -> Array:
    return np.asarray(rng.integers(low, high, shape, dtype=dtype))


def _permutation(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> Array:
    return rng.permutation(shape[0]).astype(dtype)


_DRAWS: dict[str, Callable[..., Array]] = {
    "normal": _normal,
    "uniform": _uniform,
    "bernoulli": _bernoulli,
    "randint": _randint,
    "permutation": _permutation,
}


def _on_device_of(values: Array, state: Array) -> Array:
    xp = module_of(state)
    return values if xp is np else xp.asarray(values)


@implement("random", CPU)
def random(
    state: Array,
    distribution: str,
    shape: tuple[int, ...],
    elem: Any,
    args: tuple[Any, ...],
    stream: int,
) -> Array:
    values = _DRAWS[distribution](philox(state, stream), shape, elem.dtype, *args)
    return _on_device_of(values, state)


@implement("dropout_mask", CPU)
def dropout_mask(
    state: Array, shape: tuple[int, ...], keep: float, elem: Any, stream: int
) -> Array:
    dtype = elem.dtype
    mask = _bernoulli(philox(state, stream), shape, dtype, keep)
    mask *= dtype.type(1.0 / keep)
    return _on_device_of(mask, state)
