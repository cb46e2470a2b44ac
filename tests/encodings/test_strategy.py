"""The strategy's choices, and each lance-encoding:* key taking effect; pylance reads
every page the strategy produces."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

from lancenb.errors import InvalidInputError
from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")
N = 20_000
RNG = np.random.default_rng(9)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Every test draws from its own seeded generator, so its input does not depend on
    which tests ran before it (a shared module-level generator made one test's data
    change with test order)."""
    global RNG
    RNG = np.random.default_rng(9)


def _write(tmp_path, arr, metadata=None, name="c"):
    field = pa.field(name, arr.type, metadata=metadata)
    t = pa.table({name: arr}, schema=pa.schema([field]))
    path = str(tmp_path / "s.lance")
    # the choices below are 2.1's (2.2, the default since issue 20, dictionary-encodes
    # more and compresses dictionaries: tests/compat covers 2.2 against pylance)
    with LanceFileWriter(path, t.schema, version="2.1") as w:
        w.write_batch(t)
    encs = {p.description for p in LanceFileReader(path).metadata().columns[0].pages}
    assert_tables_equal(lance_file.LanceFileReader(path).read_all().to_table(), t)
    assert_tables_equal(LanceFileReader(path).read_all().to_table(), t)
    return encs


def test_narrow_ints_are_bitpacked(tmp_path):
    assert _write(tmp_path, pa.array(RNG.integers(0, 100, N).astype(np.int32))) == {
        "mini_block:inline_bitpacking"}


def test_full_width_values_stay_flat(tmp_path):
    arr = pa.array(RNG.integers(-2**63, 2**63 - 1, N, dtype=np.int64))
    assert _write(tmp_path, arr) == {"mini_block:flat(64)"}


def test_bool_decimal_and_fixed_binary_are_flat(tmp_path):
    assert _write(tmp_path, pa.array(RNG.random(N) < 0.5)) == {"mini_block:flat(1)"}
    fsb = pa.Array.from_buffers(pa.binary(4), N, [None, pa.py_buffer(np.zeros(4 * N, np.uint8))])
    assert _write(tmp_path, fsb) == {"mini_block:flat(32)"}


def test_compression_none_turns_bitpacking_off(tmp_path):
    arr = pa.array(RNG.integers(0, 100, N).astype(np.int32))
    assert _write(tmp_path, arr, {"lance-encoding:compression": "none"}) == {
        "mini_block:flat(32)"}


@pytest.mark.parametrize("scheme", ["zstd", "lz4"])
def test_general_compression_wraps_values(tmp_path, scheme):
    arr = pa.array([f"row-{i % 50}" for i in range(N)])
    encs = _write(tmp_path, arr, {"lance-encoding:compression": scheme,
                                  "lance-encoding:compression-level": "3"})
    assert encs == {"mini_block:general(variable(flat(32)))"}


def test_general_compression_skipped_when_it_does_not_pay(tmp_path):
    arr = pa.array(RNG.integers(-2**63, 2**63 - 1, N, dtype=np.int64))  # incompressible
    assert _write(tmp_path, arr, {"lance-encoding:compression": "zstd"}) == {
        "mini_block:flat(64)"}


def test_structural_encoding_forced(tmp_path):
    arr = pa.array(["x" * 10] * 1000)
    assert _write(tmp_path, arr, {"lance-encoding:structural-encoding": "fullzip"}) == {
        "full_zip:variable(flat(32))"}
    big = pa.array([f"{i:04d}" + "y" * 300 for i in range(100)])
    assert _write(tmp_path, big) == {"full_zip:variable(flat(32))"}
    assert _write(tmp_path, big, {"lance-encoding:structural-encoding": "miniblock"}) == {
        "mini_block:variable(flat(32))"}


def test_nullable_levels_follow_page_size(tmp_path):
    small = pa.array(np.arange(300), mask=np.arange(300) % 4 == 0)
    assert _write(tmp_path, small) == {"mini_block:inline_bitpacking def=inline_bitpacking"}
    big = pa.array(np.arange(N), mask=np.arange(N) % 4 == 0)
    assert _write(tmp_path, big) == {
        "mini_block:inline_bitpacking def=out_of_line_bitpacking(flat(1))"}
    tiny = pa.array([1, None, 3], pa.int64())
    assert _write(tmp_path, tiny) == {"mini_block:flat(64) def=flat(16)"}


@pytest.mark.parametrize("key,value", [
    ("lance-encoding:compression", "brotli"),
    ("lance-encoding:compression-level", "high"),
    ("lance-encoding:bss", "sometimes"),
    ("lance-encoding:rle-threshold", "2.0"),
    ("lance-encoding:dict-divisor", "0"),
    ("lance-encoding:structural-encoding", "zipzap"),
    ("lancenb:profile", "tiny"),
])
def test_invalid_metadata_is_rejected_naming_field_and_key(tmp_path, key, value):
    schema = pa.schema([pa.field("col_x", pa.int32(), metadata={key: value})])
    with pytest.raises(InvalidInputError, match=f"col_x.*{key}"):
        LanceFileWriter(str(tmp_path / "bad.lance"), schema)
    assert not (tmp_path / "bad.lance").exists()


def test_long_string_pages_use_fsst(tmp_path):
    urls = pa.array([f"https://example.com/{RNG.integers(0, 10**6)}/item?id={i}"
                     for i in range(N)])
    assert _write(tmp_path, urls) == {"mini_block:fsst(variable(flat(32)))"}
    large = urls.cast(pa.large_string())
    assert _write(tmp_path, large) == {"mini_block:fsst(variable(flat(64)))"}


def test_fsst_skipped_for_short_pages_unless_requested(tmp_path):
    small = pa.array([f"hello world {i}" for i in range(100)])
    assert _write(tmp_path, small) == {"mini_block:variable(flat(32))"}
    assert _write(tmp_path, small, {"lance-encoding:compression": "fsst"}) == {
        "mini_block:fsst(variable(flat(32)))"}


def test_random_binary_is_not_fsst(tmp_path):
    raw = [bytes(RNG.integers(0, 256, 40, dtype=np.uint8)) for _ in range(N)]
    assert _write(tmp_path, pa.array(raw)) == {"mini_block:variable(flat(32))"}


def test_runs_use_rle_and_the_threshold_key_takes_effect(tmp_path):
    runs = pa.array(np.repeat(RNG.integers(0, 10**6, N // 400), 400).astype(np.int32))
    assert _write(tmp_path, runs) == {"mini_block:rle(flat(32), flat(8))"}
    # runs / values = 1/400: a threshold below that rules RLE out
    assert _write(tmp_path, runs, {"lance-encoding:rle-threshold": "0.001"}) == {
        "mini_block:inline_bitpacking"}
    assert _write(tmp_path, pa.array(np.full(N, -3, np.int64))) == {
        "mini_block:rle(flat(64), flat(8))"}


def test_low_cardinality_strings_use_a_dictionary(tmp_path):
    cats = pa.array(np.array(["red", "green", "blue"])[RNG.integers(0, 3, N)])
    assert _write(tmp_path, cats) == {"mini_block:inline_bitpacking dict=variable(flat(32))"}
    # a divisor larger than values / cardinality rules the dictionary out
    assert "dict=" not in " ".join(_write(tmp_path, cats,
                                          {"lance-encoding:dict-divisor": str(N)}))
    # so does a size ratio no dictionary can meet
    assert "dict=" not in " ".join(_write(tmp_path, cats,
                                          {"lance-encoding:dict-size-ratio": "0.0001"}))


def test_high_cardinality_and_tiny_pages_skip_the_dictionary(tmp_path):
    unique = pa.array([f"id-{i}" for i in range(N)])
    assert "dict=" not in " ".join(_write(tmp_path, unique))
    assert "dict=" not in " ".join(_write(tmp_path, pa.array(["a", "b"] * 20)))


def test_dictionary_pages_are_byte_identical_to_pylance(tmp_path):
    n = 20_000
    t = pa.table({
        "cat": pa.array(np.array(["red", "green", "blue", "yellow"])[RNG.integers(0, 4, n)]),
        "ncat": pa.array(np.array(["x", "yy", "zzz"])[RNG.integers(0, 3, n)],
                         mask=RNG.random(n) < 0.2),
        "lcat": pa.array(np.array(["alpha", "beta"])[RNG.integers(0, 2, n)],
                         pa.large_string())})
    for version in ("2.1", "2.2"):
        ours, theirs = tmp_path / f"o{version}.lance", tmp_path / f"p{version}.lance"
        with LanceFileWriter(str(ours), t.schema, version=version) as w:
            w.write_batch(t)
        w = lance_file.LanceFileWriter(str(theirs), t.schema, version=version)
        w.write_batch(t)
        w.close()
        assert ours.read_bytes() == theirs.read_bytes()
        assert_tables_equal(LanceFileReader(str(theirs)).read_all().to_table(), t)


def test_bss_key_takes_effect_under_general_compression(tmp_path):
    small = pa.array(RNG.integers(0, 1000, N).astype(np.int32))  # low byte entropy
    walk = pa.array(np.cumsum(RNG.normal(0, 1, N)).astype(np.float32))  # high
    z = {"lance-encoding:compression": "zstd"}
    assert _write(tmp_path, small, z) == {"mini_block:general(byte_stream_split(flat(32)))"}
    assert _write(tmp_path, small, {**z, "lance-encoding:bss": "off"}) == {
        "mini_block:general(inline_bitpacking)"}
    assert "byte_stream_split" not in str(_write(tmp_path, walk, z))
    assert _write(tmp_path, walk, {**z, "lance-encoding:bss": "on"}) == {
        "mini_block:general(byte_stream_split(flat(32)))"}
    # without lz4/zstd the key has no effect (as the reference)
    assert _write(tmp_path, small, {"lance-encoding:bss": "on"}) == {
        "mini_block:inline_bitpacking"}


def test_rle_chosen_above_half_runs_when_smaller(tmp_path):
    vals = RNG.integers(-2**31, 2**31 - 1, N).astype(np.int32)
    arr = pa.array(np.repeat(vals, RNG.geometric(1 / 1.6, N))[:N])  # ~0.62 runs/value
    assert _write(tmp_path, arr) == {"mini_block:rle(flat(32), flat(8))"}
    assert _write(tmp_path, arr, {"lance-encoding:rle-threshold": "0.5"}) == {
        "mini_block:flat(32)"}


def test_compact_writer_option_and_metadata(tmp_path):
    arr = pa.array(np.round(100 + np.cumsum(RNG.normal(0, 0.01, N)), 4))
    t = pa.table({"c": arr})
    sizes = {}
    for opt in (None, "compact"):
        path = str(tmp_path / f"{opt}.lance")
        with LanceFileWriter(path, t.schema, compression=opt) as w:
            w.write_batch(t)
        md = LanceFileReader(path).metadata()
        sizes[opt] = sum(b.size for p in md.columns[0].pages for b in p.buffers)
        assert_tables_equal(lance_file.LanceFileReader(path).read_all().to_table(), t)
    # the compact profile shrinks this smooth series well below its raw size, and never
    # past the default (which, depending on the draw, already dictionary-encodes it)
    assert sizes["compact"] < 0.45 * N * 8
    assert sizes["compact"] <= sizes[None]
    # an explicit compression on the field wins over the profile
    field = pa.field("c", arr.type, metadata={"lance-encoding:compression": "none"})
    t2 = pa.table({"c": arr}, schema=pa.schema([field]))
    path = str(tmp_path / "none.lance")
    with LanceFileWriter(path, t2.schema, compression="compact") as w:
        w.write_batch(t2)
    # values stored flat: no byte-stream-split or general compression from the profile
    # (some draws dictionary-encode the series, whose indices are then flat too; the 2.2
    # dictionary itself is always LZ4-wrapped, as pylance 14 does)
    encs = {p.description for p in LanceFileReader(path).metadata().columns[0].pages}
    assert all(e.startswith("mini_block:flat(") for e in encs), encs
    with pytest.raises(InvalidInputError, match="compression"):
        LanceFileWriter(str(tmp_path / "bad.lance"), t.schema, compression="smallest")
