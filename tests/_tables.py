"""Deterministic test tables covering every flat type lancenb writes."""

from __future__ import annotations

import decimal
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def with_nulls(arr: pa.Array, rng, p: float = 0.1) -> pa.Array:
    mask = pa.array(rng.random(len(arr)) < p)
    return pc.if_else(mask, pa.nulls(len(arr), arr.type), arr)


def flat_columns(n: int, seed: int = 0, nulls: bool = True) -> dict[str, pa.Array]:
    """One column per flat Arrow type (and some with nulls)."""
    rng = np.random.default_rng(seed)

    def maybe(a):
        return with_nulls(a, rng) if nulls else a

    def ints(lo, hi, dt):
        return pa.array(rng.integers(lo, hi, n, dtype=np.int64 if lo < 0 else np.uint64), dt)

    def fsb(w):
        raw = rng.integers(0, 256, n * w, dtype=np.uint8)
        return pa.Array.from_buffers(pa.binary(w), n, [None, pa.py_buffer(raw)])

    text = ["", "a", "héllo wörld", "日本語テキスト", "zero\x00byte", "emoji 🎉"]
    cols = {
        "i8": maybe(ints(-128, 128, pa.int8())),
        "i16": ints(-2**15, 2**15, pa.int16()),
        "i32": maybe(ints(-2**31, 2**31, pa.int32())),
        "i64": ints(-2**63, 2**63 - 1, pa.int64()),
        "u8": ints(0, 256, pa.uint8()),
        "u16": maybe(ints(0, 2**16, pa.uint16())),
        "u32": ints(0, 2**32, pa.uint32()),
        "u64": maybe(ints(0, 2**64 - 1, pa.uint64())),
        "f16": pa.array(rng.standard_normal(n).astype(np.float16)),
        "f32": maybe(pa.array(rng.standard_normal(n).astype(np.float32))),
        "f64": pa.array(np.where(rng.random(n) < 0.01, np.nan, rng.standard_normal(n))),
        "bool": pa.array(rng.random(n) < 0.3),
        "bool_n": maybe(pa.array(rng.random(n) < 0.6)),
        "date32": pa.array(rng.integers(-10000, 30000, n).astype(np.int32), pa.date32()),
        "date64": maybe(pa.array(rng.integers(0, 2 * 10**12, n), pa.date64())),
        "time32s": pa.array(rng.integers(0, 86400, n).astype(np.int32), pa.time32("s")),
        "time32ms": pa.array(rng.integers(0, 86400000, n).astype(np.int32), pa.time32("ms")),
        "time64us": maybe(pa.array(rng.integers(0, 86400 * 10**6, n), pa.time64("us"))),
        "time64ns": pa.array(rng.integers(0, 86400 * 10**9, n), pa.time64("ns")),
        "ts": pa.array(rng.integers(0, 2 * 10**15, n), pa.timestamp("us")),
        "ts_tz": maybe(pa.array(rng.integers(0, 2 * 10**12, n), pa.timestamp("ms", "UTC"))),
        "ts_ns_tz": pa.array(rng.integers(0, 2 * 10**18, n),
                             pa.timestamp("ns", "America/New_York")),
        "ts_s": pa.array(rng.integers(0, 2 * 10**9, n), pa.timestamp("s")),
        "dur": maybe(pa.array(rng.integers(-10**12, 10**12, n), pa.duration("ns"))),
        "dec": maybe(pa.array([decimal.Decimal(int(x)).scaleb(-2)
                               for x in rng.integers(-10**15, 10**15, n)], pa.decimal128(18, 2))),
        "fsb16": maybe(fsb(16)),
        "fsb3": fsb(3),
        "str": maybe(pa.array([text[i % len(text)] * int(k) for i, k in
                               enumerate(rng.integers(0, 6, n))])),
        "bin": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
                         for k in rng.integers(0, 40, n)], pa.binary()),
        "lstr": maybe(pa.array(["x" * int(k) for k in rng.integers(0, 100, n)],
                               pa.large_string())),
        "lbin": pa.array([b"\x00\xff" * int(k) for k in rng.integers(0, 20, n)],
                         pa.large_binary()),
        "all_null": pa.nulls(n, pa.int64()),
        "all_null_str": pa.nulls(n, pa.string()),
        "null_type": pa.nulls(n),
    }
    return cols


def flat_table(n: int, seed: int = 0, nulls: bool = True) -> pa.Table:
    return pa.table(flat_columns(n, seed, nulls))


def _float_bits(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    width = arr.type.bit_width // 8
    vals = np.frombuffer(arr.buffers()[1], dtype=f"u{width}")[arr.offset:arr.offset + len(arr)]
    valid = np.asarray(arr.is_valid())
    return np.where(valid, vals, 0), valid


def assert_tables_equal(got: pa.Table, want: pa.Table) -> None:
    """Equal schemas and values; floats compared bit for bit (so NaN == NaN)."""
    assert got.schema.equals(want.schema, check_metadata=False), (got.schema, want.schema)
    assert got.num_rows == want.num_rows
    for name in want.column_names:
        g, w = got[name], want[name]
        if pa.types.is_floating(w.type):
            gb, gv = _float_bits(g)
            wb, wv = _float_bits(w)
            assert np.array_equal(gv, wv), f"column {name}: validity differs"
            assert np.array_equal(gb, wb), f"column {name}: values differ"
        elif not g.equals(w):
            # Arrow's equality says NaN != NaN; nested columns holding floats are
            # compared value by value instead, floats bit for bit
            st = _storage_type(w.type)
            assert _same(g.cast(st).to_pylist(), w.cast(st).to_pylist()), \
                f"column {name} differs"


def _storage_type(t: pa.DataType) -> pa.DataType:
    """``t`` with temporal leaves as integers (to_pylist would turn extreme dates
    into Python datetimes and overflow)."""
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_storage_type(t.field(i).type))
                          for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_storage_type(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_storage_type(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(_storage_type(t.value_type)), t.list_size)
    if pa.types.is_temporal(t):
        return pa.int32() if t.bit_width == 32 else pa.int64()
    return t


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def flip_page_bytes(tmp_path, path, buffers, flips: int, rows: list[int], seed: int) -> int:
    """Flip one random byte in each of ``buffers`` (page buffer descriptors of the file
    at ``path``) ``flips`` times; after each flip, read the damaged copy whole and take
    ``rows``. Any failure other than a LanceError propagates. Returns how many reads
    raised CorruptFileError."""
    from lancenb.errors import CorruptFileError, LanceError
    from lancenb.file import LanceFileReader

    good = path.read_bytes()
    rng = np.random.default_rng(seed)
    corrupt = 0
    damaged = tmp_path / "damaged.lance"
    for buf in buffers:
        for _ in range(flips):
            bad = bytearray(good)
            pos = buf.position + int(rng.integers(0, max(1, buf.size)))
            bad[pos] ^= int(rng.integers(1, 256))
            damaged.write_bytes(bytes(bad))
            try:
                r = LanceFileReader(str(damaged))
                r.read_all().to_table()
                r.take_rows(rows).to_table()
            except CorruptFileError:
                corrupt += 1
            except LanceError:
                pass
    return corrupt
