"""The safetensors file format, written and read with the standard library and numpy only.

Layout (https://github.com/huggingface/safetensors): 8 bytes little-endian u64 ``N``; ``N``
bytes of UTF-8 JSON ``{name: {"dtype": "F32", "shape": [r, c], "data_offsets": [b, e]}, ...,
"__metadata__": {str: str}}`` (padded with spaces to a multiple of 8); then the raw
little-endian, row-major bytes, offsets relative to the end of the header. Like the reference
reader, :func:`parse` requires the tensors to tile the data section exactly (no overlap, no
hole, nothing after the last one). No pickle, no code execution: only JSON and bytes. A
damaged or hostile file (a header nested thousands deep, hundreds of thousands of names, huge
fields) is a :class:`~typed_nn.WeightFileError` whose message quotes a bounded part of it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import WeightFileError, brief, message
from ..tags import MAX_RANK, BFloat16, ElemTag, Float16, Float32, Float64, Int32, Int64

__all__ = ["DTYPE_CODES", "MAX_HEADER_BYTES", "Entry", "Fail", "encode_header", "parse"]

DTYPE_CODES: dict[str, type[ElemTag]] = {
    "F32": Float32,
    "F64": Float64,
    "I32": Int32,
    "I64": Int64,
    "F16": Float16,
    "BF16": BFloat16,
}
"""The safetensors dtype codes typed_nn reads and writes, with their element tags."""
CODE_OF_ELEM: dict[type[ElemTag], str] = {elem: code for code, elem in DTYPE_CODES.items()}
MAX_HEADER_BYTES = 100_000_000
"""Largest header accepted (the reference implementation's bound)."""
METADATA = "__metadata__"


@dataclass(frozen=True)
class Entry:
    """One tensor of a file: element tag, shape and byte range in the data section."""

    elem: type[ElemTag]
    shape: tuple[int, ...]
    begin: int
    end: int

    def array(self, data: bytes, base: int) -> npt.NDArray[Any]:
        """A read-only view of this tensor's bytes in ``data`` (data section at ``base``)."""
        dtype = self.elem.dtype.newbyteorder("<")
        if self.begin == self.end:
            return np.empty(self.shape, dtype)
        count = (self.end - self.begin) // dtype.itemsize
        return np.frombuffer(data, dtype, count, base + self.begin).reshape(self.shape)


def encode_header(
    tensors: list[tuple[str, type[ElemTag], tuple[int, ...], int]], metadata: dict[str, str] | None
) -> bytes:
    """The length-prefixed, space-padded header for (name, elem, shape, nbytes), laid out in order."""
    header: dict[str, Any] = {METADATA: metadata} if metadata else {}
    offset = 0
    for name, elem, shape, nbytes in tensors:
        header[name] = {
            "dtype": CODE_OF_ELEM[elem],
            "shape": list(shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    raw += b" " * (-len(raw) % 8)
    return len(raw).to_bytes(8, "little") + raw


def parse(
    data: bytes, source: str, fail: Fail | None = None
) -> tuple[dict[str, Entry], dict[str, str], int]:
    """Validate a whole file; returns its entries, its metadata and the data section's start
    (``fail``: makes the error of a damaged file, a weight file's by default)."""
    fail = fail if fail is not None else _Fail(source)
    if len(data) < 8:
        raise fail(f"the file has {len(data)} bytes, fewer than the 8-byte header length.")
    size = int.from_bytes(data[:8], "little")
    if size > MAX_HEADER_BYTES or 8 + size > len(data):
        raise fail(
            f"the header length {size} does not fit.",
            [("file size", f"{len(data)} bytes"), ("bound", f"{MAX_HEADER_BYTES} bytes")],
        )
    try:
        header = json.loads(data[8 : 8 + size].decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as exc:
        raise fail(f"the header is not valid JSON ({str(exc)[:200]}).") from None
    except RecursionError:  # the JSON decoder recurses once per nesting level
        raise fail(
            "the header nests too deeply to be a safetensors header.",
            [("expected", "{name: {dtype, shape, data_offsets}, ...}: 3 levels")],
        ) from None
    if not isinstance(header, dict):
        raise fail(f"the header is a JSON {type(header).__name__}, not an object.")
    metadata = header.pop(METADATA, {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise fail("__metadata__ must map strings to strings.", [("found", brief(metadata))])
    entries = {name: _entry(name, info, fail) for name, info in header.items()}
    _check_layout(entries, len(data) - 8 - size, fail)
    return entries, metadata, 8 + size


class Fail(Protocol):
    """Makes the error of a damaged file: ``what`` is wrong, ``items`` more lines, ``tensor``
    the entry at fault."""

    def __call__(
        self, what: str, items: list[tuple[str, str]] | None = None, tensor: str | None = None
    ) -> WeightFileError: ...


class _Fail:
    """Builds WeightFileErrors that name the file."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(
        self, what: str, items: list[tuple[str, str]] | None = None, tensor: str | None = None
    ) -> WeightFileError:
        """The error for ``what``; ``tensor`` names the entry at fault (quoted briefly)."""
        at = [] if tensor is None else [("tensor", brief(tensor))]
        return WeightFileError(
            message(
                f"cannot load weights from {self.source}: {what}",
                [("file", self.source), *at, *(items or [])],
                hint="the file is damaged or not a safetensors file; nothing was changed. "
                "Save it again with typed_nn.model.save_weights or safetensors.",
            )
        )


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # rare: name the first repeated key, in one pass
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {brief(key)}")
            seen.add(key)
    return result


def _is_size(x: object) -> bool:
    """A JSON integer that fits the format's u64 (sizes and offsets; no bools)."""
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 64


def _entry(name: str, info: object, fail: Fail) -> Entry:
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise fail("a tensor entry lacks dtype, shape or data_offsets.", tensor=name)
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    elem = DTYPE_CODES.get(code) if isinstance(code, str) else None
    if elem is None:
        raise fail(
            f"dtype {brief(code)} is not supported.",
            [("supported", ", ".join(DTYPE_CODES))],
            tensor=name,
        )
    if not isinstance(shape, list) or not all(_is_size(d) for d in shape):
        raise fail(f"the shape {brief(shape)} is not a list of sizes in [0, 2**64).", tensor=name)
    if len(shape) > MAX_RANK:
        raise fail(
            f"the shape {brief(shape)} has rank {len(shape)}; typed_nn supports <= {MAX_RANK}.",
            tensor=name,
        )
    ok = isinstance(offsets, list) and len(offsets) == 2 and all(_is_size(o) for o in offsets)
    if not ok or offsets[0] > offsets[1]:
        raise fail(f"data_offsets {brief(offsets)} is not a range [begin, end].", tensor=name)
    nbytes = math.prod(shape) * elem.dtype.itemsize
    if offsets[1] - offsets[0] != nbytes:
        raise fail(
            "the byte range does not match the shape and dtype.",
            [("offsets", repr(offsets)), ("expected", f"{nbytes} bytes for {code}{brief(shape)}")],
            tensor=name,
        )
    return Entry(elem, tuple(shape), offsets[0], offsets[1])


def _check_layout(entries: dict[str, Entry], data_len: int, fail: Fail) -> None:
    """Offsets in range, non-overlapping, without holes or trailing bytes."""
    for name, e in entries.items():
        if e.end > data_len:
            raise fail(
                "the file is truncated: a tensor's bytes run past its end.",
                [("ends at", str(e.end)), ("data bytes", str(data_len))],
                tensor=name,
            )
    position, previous = 0, None
    for name, e in sorted(entries.items(), key=lambda kv: (kv[1].begin, kv[1].end)):
        if e.begin != position:
            what = "overlap" if e.begin < position else "leave a gap between them"
            raise fail(
                f"the byte ranges of two tensors {what}.",
                [
                    (
                        "first",
                        f"{'(start of data)' if previous is None else brief(previous)} ends at {position}",
                    ),
                    ("second", f"{brief(name)} starts at {e.begin}"),
                ],
            )
        position, previous = e.end, name
    if position != data_len:
        raise fail(
            f"{data_len - position} bytes follow the last tensor.", [("data bytes", str(data_len))]
        )
