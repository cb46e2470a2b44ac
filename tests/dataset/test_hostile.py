"""Hostile datasets and inputs (issue 17): paths that leave the dataset, decompression
bombs, sizes that would allocate before they are checked, deep filters and junk
metadata files. Each test is named after the finding it reproduces."""

from __future__ import annotations

import datetime
import os
import shutil
import struct
import subprocess
import sys

import lance
import numpy as np
import pyarrow as pa
import pytest
import zstandard

import lancenb
from lancenb.encodings.physical import general
from lancenb.errors import CorruptFileError, LanceError
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.table.manifest import frame_manifest, parse_manifest_file

BOMB = 64 << 20  # each chunk inflates to this


def _bomb_file(path, *, prefix: int | None = BOMB, content_size: bool = False) -> None:
    """A 2.1 file of 50 mini-block chunks (512 int64 values each) whose zstd units
    inflate to 64 MiB: the writer's compressor is swapped for one emitting the bomb
    (``prefix`` None keeps the true size prefix of 4096 bytes, so the frame lies)."""
    frame = zstandard.ZstdCompressor(level=19, write_content_size=content_size).compress(
        b"\0" * BOMB)
    real = general.compress

    def bomb(data, scheme, level=None):
        return struct.pack("<Q", len(bytes(data)) if prefix is None else prefix) + frame

    general.compress = bomb
    try:
        field = pa.field("x", pa.int64(), metadata={"lance-encoding:compression": "zstd"})
        t = pa.table({"x": pa.array(np.arange(25_600) % 1000 * 7919, pa.int64())},
                     schema=pa.schema([field]))
        with LanceFileWriter(str(path), version="2.1") as w:
            w.write_batch(t)
    finally:
        general.compress = real


_RSS = """
import resource, sys
def _hwm_kib():
    # the peak RSS of this process image: /proc's VmHWM starts afresh at exec, while
    # getrusage's ru_maxrss keeps the forked parent's size across it (Linux)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
which, path = sys.argv[1], sys.argv[2]
if which == "lance":
    from lance.file import LanceFileReader
else:
    from lancenb.file import LanceFileReader
r = LanceFileReader(path)
base = _hwm_kib()
try:
    r.read_all().to_table()
    out = "ok"
except Exception as e:
    out = type(e).__name__
print(out, (_hwm_kib() - base) // 1024)
"""


def _peak_growth_mib(which: str, path) -> tuple[str, int]:
    got = subprocess.run([sys.executable, "-c", _RSS, which, str(path)], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return got[0], int(got[1])


@pytest.mark.parametrize("prefix,content_size", [(BOMB, False), (None, False), (None, True)],
                         ids=["prefix-claims-64MiB", "frame-lies-no-size", "frame-lies-sized"])
def test_zstd_chunk_bomb_is_corrupt_and_small(tmp_path, prefix, content_size):
    path = tmp_path / "bomb.lance"
    _bomb_file(path, prefix=prefix, content_size=content_size)
    assert os.path.getsize(path) < 200_000
    with pytest.raises(CorruptFileError, match="chunk 0"):
        LanceFileReader(str(path)).read_all()
    with pytest.raises(LanceError):
        LanceFileReader(str(path)).take_rows([5, 20_000])


def test_zstd_chunk_bomb_peak_memory_next_to_pylance(tmp_path):
    path = tmp_path / "bomb.lance"
    _bomb_file(path)
    ours, grew = _peak_growth_mib("lancenb", path)
    theirs, _ = _peak_growth_mib("lance", path)
    assert ours == "CorruptFileError" and theirs != "ok"
    # one chunk's worth at most (50 chunks x 64 MiB = 3.2 GiB before the fix)
    assert grew < 64


def test_decompress_refuses_claims_over_the_context_limit():
    unit = general.compress(b"a" * 5000, general.ZSTD)
    assert general.decompress(unit, general.ZSTD, "u", limit=5000) == b"a" * 5000
    with pytest.raises(CorruptFileError, match="more than the 4999"):
        general.decompress(unit, general.ZSTD, "u", limit=4999)
    lz = general.compress(b"b" * 5000, general.LZ4)
    with pytest.raises(CorruptFileError, match="claims 5000"):
        general.decompress(lz, general.LZ4, "u", limit=100)
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(b"c" * 10_000)
    assert general.decompress(bare, general.ZSTD, "u", limit=10_000) == b"c" * 10_000
    with pytest.raises(CorruptFileError, match="inflates past"):
        general.decompress(bare, general.ZSTD, "u", limit=9_999)


# -- helpers for dataset-level tests ---------------------------------------------------
def _manifest_path(uri) -> str:
    vd = os.path.join(uri, "_versions")
    names = sorted(n for n in os.listdir(vd) if n.endswith(".manifest"))
    return os.path.join(vd, names[0])  # V2 names: the newest sorts first


def _rewrite_manifest(uri, edit) -> None:
    """Decode the latest manifest with the protobuf classes, ``edit(manifest)``, frame
    it again in place (its inline transaction kept)."""
    path = _manifest_path(uri)
    with open(path, "rb") as f:
        mf = parse_manifest_file(f.read(), path)
    txn = mf.transaction()
    edit(mf.manifest)
    with open(path, "wb") as f:
        f.write(frame_manifest(mf.manifest, txn))


def _pair(tmp_path):
    """Two datasets side by side: ``ds`` (7, 8, 9) and ``other`` (1, 2, 3)."""
    other, ds = str(tmp_path / "other.lance"), str(tmp_path / "ds.lance")
    lancenb.write_dataset(pa.table({"a": [1, 2, 3]}), other)
    lancenb.write_dataset(pa.table({"a": [7, 8, 9]}), ds)
    return ds, other


def _data_name(uri) -> str:
    return os.listdir(os.path.join(uri, "data"))[0]


def _escapes(tmp_path):
    other_file = _data_name(str(tmp_path / "other.lance"))
    return [f"../../other.lance/data/{other_file}", f"../other.lance/data/{other_file}",
            str(tmp_path / "other.lance" / "data" / other_file),
            f"file://{tmp_path}/other.lance/data/{other_file}", "x.lance::memory://a",
            "memory://x.lance", "a\x00b.lance", f"./{other_file}", "", "sub/x.lance"]


def test_data_file_path_traversal_is_refused_like_pylance(tmp_path):
    ds, other = _pair(tmp_path)
    for bad in _escapes(tmp_path):
        shutil.rmtree(ds)
        lancenb.write_dataset(pa.table({"a": [7, 8, 9]}), ds)
        lancenb.write_dataset(pa.table({"a": [10]}), ds, mode="append")
        _rewrite_manifest(ds, lambda m, bad=bad: setattr(m.fragments[0].files[0], "path", bad))
        with pytest.raises(CorruptFileError, match="data file path") as e:
            lancenb.dataset(ds).to_table()
        assert ".manifest" in str(e.value)  # names the manifest
        with pytest.raises(CorruptFileError):  # compaction must not copy the rows in
            lancenb.dataset(ds).optimize.compact_files()
        with pytest.raises((OSError, ValueError)):  # pylance refuses every one too
            lance.dataset(ds).to_table()
    assert lancenb.dataset(other).to_table()["a"].to_pylist() == [1, 2, 3]


def test_external_row_id_path_traversal_is_refused(tmp_path):
    ds, other = _pair(tmp_path)
    lancenb.write_dataset(pa.table({"a": [1, 2, 3]}), ds, mode="overwrite",
                          enable_stable_row_ids=True)
    target = f"../other.lance/data/{_data_name(other)}"

    def point_outside(m):
        m.fragments[0].external_row_ids.path = target
        m.fragments[0].external_row_ids.size = 4

    _rewrite_manifest(ds, point_outside)
    with pytest.raises(CorruptFileError, match="external row-id file path"):
        lancenb.dataset(ds).get_fragments()[0].row_ids()


def test_transaction_file_path_traversal_is_ignored(tmp_path):
    ds, _ = _pair(tmp_path)
    _rewrite_manifest(ds, lambda m: setattr(m, "transaction_file", "../../../etc/passwd"))
    with pytest.raises(CorruptFileError, match="escap|segment"):
        lancenb.dataset(ds)._store.read_bytes("_transactions/../../../etc/passwd")
    assert lancenb.dataset(ds).to_table()["a"].to_pylist() == [7, 8, 9]


def test_confined_paths():
    from lancenb.io.paths import is_confined

    assert is_confined("0a1b.lance", single=True)
    assert is_confined("_rowids/1-2.bin")
    for bad in ("..", "../x", "a/../b", "/abs", "s3://b/x", "c:x", "a::b", "a\x00", "a\\b",
                "a//b", "", "./a"):
        assert not is_confined(bad), bad
    assert not is_confined("a/b", single=True)


# -- allocation before validation -------------------------------------------------------
def test_physical_rows_2_pow_36_with_deletions_is_corrupt_not_memory_error(tmp_path):
    ds, _ = _pair(tmp_path)
    d = lancenb.dataset(ds)
    d.delete("a = 8")
    _rewrite_manifest(ds, lambda m: setattr(m.fragments[0], "physical_rows", 2**36))
    with pytest.raises(CorruptFileError, match="physical_rows"):
        lancenb.dataset(ds).to_table()


@pytest.mark.parametrize("rows", [2**32 + 1, 2**62, 2**63, 2**64 - 1])
@pytest.mark.parametrize("deleted", [False, True])
def test_take_with_physical_rows_past_a_fragment_is_corrupt(tmp_path, rows, deleted):
    """Found by the dataset fuzz: a take over a manifest claiming 2**63 rows or more
    raised OverflowError (the rows were read into int64 unchecked)."""
    ds, _ = _pair(tmp_path)
    if deleted:
        lancenb.dataset(ds).delete("a = 8")
    _rewrite_manifest(ds, lambda m: setattr(m.fragments[0], "physical_rows", rows))
    with pytest.raises(CorruptFileError, match="physical_rows"):
        lancenb.dataset(ds).take([0, 1])


def test_inline_row_id_range_of_2_pow_36_is_corrupt(tmp_path):
    from lancenb.table.rowids import encode_range_row_ids

    ds = str(tmp_path / "ds.lance")
    lancenb.write_dataset(pa.table({"a": [1, 2, 3]}), ds, enable_stable_row_ids=True)
    _rewrite_manifest(ds, lambda m: setattr(m.fragments[0], "inline_row_ids",
                                            encode_range_row_ids(0, 2**36)))
    with pytest.raises(CorruptFileError, match="row ids"):
        lancenb.dataset(ds).get_fragments()[0].row_ids()
    with pytest.raises(LanceError):
        lancenb.dataset(ds).to_table(with_row_id=True)


def test_roaring_deletion_file_of_2_pow_32_rows_is_corrupt(tmp_path):
    from pyroaring import BitMap

    from lancenb._proto import table_pb2
    from lancenb.table.deletion import deletion_path

    ds, _ = _pair(tmp_path)
    bm = BitMap()
    bm.add_range(0, 2**32)
    raw = bm.serialize()
    assert len(raw) < 1_000_000

    def add(m):
        f = m.fragments[0]
        f.deletion_file.file_type = table_pb2.DeletionFile.BITMAP
        f.deletion_file.id = 7
        f.deletion_file.read_version = 1
        f.deletion_file.num_deleted_rows = 2
        rel = deletion_path(f.id, f.deletion_file)
        os.makedirs(os.path.join(ds, "_deletions"), exist_ok=True)
        with open(os.path.join(ds, rel), "wb") as out:
            out.write(raw)

    _rewrite_manifest(ds, add)
    with pytest.raises(CorruptFileError, match="deletes 4294967296 rows"):
        lancenb.dataset(ds).to_table()


# -- deep filters ------------------------------------------------------------------------
@pytest.fixture()
def ten(tmp_path):
    uri = str(tmp_path / "ten.lance")
    lancenb.write_dataset(pa.table({"id": list(range(10)), "s": [str(i) for i in range(10)]}),
                          uri)
    return uri


def test_3000_term_and_or_chains_evaluate_like_pylance(ten):
    and_chain = " AND ".join(["id = 1"] * 3000)
    or_chain = " OR ".join(f"id = {i}" for i in range(3000))
    ds, ref = lancenb.dataset(ten), lance.dataset(ten)
    for f in (and_chain, or_chain):
        assert ds.count_rows(filter=f) == ref.count_rows(filter=f)
        assert ds.to_table(filter=f) == ref.to_table(filter=f)
    ds.update({"s": "'x'"}, where=and_chain)
    assert lancenb.dataset(ten).to_table(filter="s = 'x'")["id"].to_pylist() == [1]
    ds.delete(" OR ".join(f"id = {i}" for i in range(5, 3000)))
    assert lancenb.dataset(ten).count_rows() == lance.dataset(ten).count_rows() == 5


def test_long_in_list(ten):
    f = "id IN (" + ",".join(str(i) for i in range(0, 20_000, 2)) + ")"
    assert lancenb.dataset(ten).count_rows(filter=f) == 5


@pytest.mark.parametrize("text", ["(" * 3000 + "id = 1" + ")" * 3000, "NOT " * 3000 + "id = 1",
                                  " + ".join(["id"] * 3000) + " > 5",
                                  "(" * 65 + "id = 1" + ")" * 65, "- " * 3000 + "id > 1"],
                         ids=["parens", "not", "arithmetic", "parens65", "minus"])
def test_deep_filters_are_invalid_input_not_recursion_errors(ten, text):
    from lancenb.errors import InvalidInputError

    ds = lancenb.dataset(ten)
    for call in (lambda: ds.count_rows(filter=text), lambda: ds.to_table(filter=text),
                 lambda: ds.delete(text), lambda: ds.update({"s": "'y'"}, where=text)):
        with pytest.raises(InvalidInputError, match="nests"):
            call()
    assert lancenb.dataset(ten).count_rows() == 10


def test_filter_nesting_within_the_limit(ten):
    assert lancenb.dataset(ten).count_rows(filter="(" * 40 + "id = 1" + ")" * 40) == 1
    assert lancenb.dataset(ten).count_rows(filter="NOT " * 41 + "id = 1") == 9


# -- junk metadata files -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["\u00b2.manifest", "99999999999999999999.manifest",
                                  "18446744073709551615.manifest", "abc.manifest",
                                  "-1.manifest"])
def test_junk_manifest_names_are_ignored_like_pylance(ten, name):
    with open(os.path.join(ten, "_versions", name), "wb") as f:
        f.write(b"junk")
    ds = lancenb.dataset(ten)
    assert [v["version"] for v in ds.versions()] == [1]
    assert ds.version == lance.dataset(ten).version == 1
    r = lancenb_validate(ten)
    assert not r["ok"] and any("not a manifest name" in p["message"] for p in r["problems"])


def lancenb_validate(uri):
    from lancenb.inspect import validate

    return validate(uri)


@pytest.mark.parametrize("body", [b"[]", b"{}", b'{"version": "x"}', b'{"version": -1}',
                                  b'{"version": 1.5}', b'{"version": 1}', b"not json",
                                  b'{"version": true, "manifestSize": 1}', b"[" * 100_000])
def test_junk_tag_files_are_corrupt_file_errors(ten, body):
    tags = os.path.join(ten, "_refs", "tags")
    os.makedirs(tags)
    with open(os.path.join(tags, "t.json"), "wb") as f:
        f.write(body)
    ds = lancenb.dataset(ten)
    for call in (ds.tags.list, lambda: lancenb.dataset(ten, version="t"),
                 lambda: ds.cleanup_old_versions(older_than=datetime.timedelta(0))):
        with pytest.raises(CorruptFileError, match="tag file"):
            call()
    with pytest.raises((OSError, ValueError, RuntimeError)):  # pylance refuses them all
        lance.dataset(ten).tags.list()
    r = lancenb_validate(ten)
    assert not r["ok"] and any("t.json" in p["file"] for p in r["problems"])


def test_tags_written_by_pylance_still_read(ten):
    lance.dataset(ten).tags.create("v1", 1)
    assert lancenb.dataset(ten).tags.list()["v1"]["version"] == 1
    assert lancenb.dataset(ten, version="v1").version == 1
    assert lancenb_validate(ten)["ok"]


@pytest.mark.parametrize("body", [b"junk", b"[]", b'{"version": "x"}'])
def test_junk_hint_file_is_ignored_and_reported(ten, body):
    with open(os.path.join(ten, "_versions", "latest_version_hint.json"), "wb") as f:
        f.write(body)
    assert lancenb.dataset(ten).to_table()["id"].to_pylist() == list(range(10))
    r = lancenb_validate(ten)
    assert [p["message"] for p in r["problems"] if "hint" in p["message"]]


def test_manifest_timestamp_2_pow_62(ten):
    _rewrite_manifest(ten, lambda m: setattr(m.timestamp, "seconds", 2**62))
    with pytest.raises(CorruptFileError, match="timestamp"):
        lancenb.dataset(ten).versions()
    with pytest.raises(CorruptFileError, match="timestamp"):
        lancenb.dataset(ten, asof=datetime.datetime(2020, 1, 1))
    assert lancenb.dataset(ten).count_rows() == 10
    assert any("timestamp" in p["message"] for p in lancenb_validate(ten)["problems"])


def test_nul_byte_in_data_file_path(ten):
    _rewrite_manifest(ten, lambda m: setattr(m.fragments[0].files[0], "path", "a\x00b.lance"))
    with pytest.raises(CorruptFileError, match="contains"):
        lancenb.dataset(ten).to_table()
    assert any("\\x00" in p["message"] for p in lancenb_validate(ten)["problems"])


def test_cli_reports_junk_in_one_line_each(ten):
    _rewrite_manifest(ten, lambda m: (setattr(m.timestamp, "seconds", 2**62),
                                      setattr(m.fragments[0].files[0], "path", "../x.lance")))
    with open(os.path.join(ten, "_versions", "\u00b2.manifest"), "wb") as f:
        f.write(b"x")
    os.makedirs(os.path.join(ten, "_refs", "tags"))
    with open(os.path.join(ten, "_refs", "tags", "t.json"), "wb") as f:
        f.write(b"[]")

    def run(*args):
        return subprocess.run([sys.executable, "-m", "lancenb.tools.cli", *args],
                              capture_output=True, text=True, timeout=120)

    v = run("validate", ten)
    assert v.returncode == 1 and "Traceback" not in v.stderr
    for what in ("not a manifest name", "t.json", "timestamp", "'../x.lance'"):
        assert what in v.stdout, what
    for args in (("inspect", ten), ("inspect", ten, "--files"), ("inspect", ten, "--json")):
        r = run(*args)
        assert "Traceback" not in r.stderr + r.stdout
    bad = run("inspect", os.path.join(ten, "_versions", "\u00b2.manifest"))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_cleanup_ignores_a_tag_of_a_missing_version_like_pylance(ten):
    lancenb.write_dataset(pa.table({"id": [99], "s": ["x"]}), ten, mode="append")
    tags = os.path.join(ten, "_refs", "tags")
    os.makedirs(tags)
    with open(os.path.join(tags, "t.json"), "w") as f:
        f.write('{"branch": null, "version": 18446744073709551615, "manifestSize": 10, '
                '"metadata": {}}')
    stats = lancenb.dataset(ten).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert stats.old_versions == 1
    assert lancenb.dataset(ten).count_rows() == 11


def test_full_zip_values_claiming_more_than_a_page_are_refused_up_front(tmp_path):
    # 40 values of 40 KiB (full-zip, each value zstd-compressed on its own) whose size
    # prefixes claim 64 MiB each: 2.5 GiB together, refused before inflating any
    frame = zstandard.ZstdCompressor(level=19).compress(b"\0" * BOMB)
    real = general.compress

    def bomb(data, scheme, level=None):
        return struct.pack("<Q", BOMB) + frame

    path = str(tmp_path / "fz.lance")
    field = pa.field("b", pa.binary(), metadata={"lance-encoding:compression": "zstd"})
    t = pa.table({"b": [bytes([i]) * 40_000 for i in range(40)]}, schema=pa.schema([field]))
    general.compress = bomb
    try:
        with LanceFileWriter(path, version="2.1") as w:
            w.write_batch(t)
    finally:
        general.compress = real
    assert os.path.getsize(path) < 200_000
    with pytest.raises(CorruptFileError, match="together"):
        LanceFileReader(path).read_all()


@pytest.mark.parametrize("version", [0, 2**64 - 1, 2**64 - 2])
def test_manifest_version_field_out_of_range(ten, version):
    # found by the dataset fuzzer: compaction then built version 2**64 (a ValueError)
    _rewrite_manifest(ten, lambda m: setattr(m, "version", version))
    for call in (lambda: lancenb.dataset(ten).to_table(),
                 lambda: lancenb.dataset(ten).optimize.compact_files(),
                 lambda: lancenb.dataset(ten).delete("id = 1")):
        with pytest.raises(CorruptFileError, match="version"):
            call()


def test_field_metadata_that_is_not_utf8_does_not_break_compaction(ten):
    # found by the dataset fuzzer: compaction raised UnicodeDecodeError
    lancenb.write_dataset(pa.table({"id": [10], "s": ["x"]}), ten, mode="append")
    _rewrite_manifest(ten, lambda m: m.fields[0].metadata.__setitem__("k", b"\xff\xff"))
    lancenb.dataset(ten).optimize.compact_files()
    assert lancenb.dataset(ten).count_rows() == 11


@pytest.mark.parametrize("call", ["compact", "append"])
def test_max_fragment_id_at_the_32_bit_limit(ten, call):
    # found by the dataset fuzzer: compaction set max_fragment_id to 2**32 (a ValueError)
    lancenb.write_dataset(pa.table({"id": [10], "s": ["x"]}), ten, mode="append")
    _rewrite_manifest(ten, lambda m: setattr(m, "max_fragment_id", 2**32 - 1))
    with pytest.raises(CorruptFileError, match="max_fragment_id is 4294967295"):
        if call == "compact":
            lancenb.dataset(ten).optimize.compact_files()
        else:
            lancenb.write_dataset(pa.table({"id": [11], "s": ["y"]}), ten, mode="append")
    assert lancenb.dataset(ten).count_rows() == 11


def test_field_metadata_that_is_not_utf8_does_not_break_sql_filters(ten):
    # the dataset fuzzer's 'Expected either a Arrow Array or Arrow Stream' from the SQL
    # engine: DataFusion refuses such metadata; pylance filters the dataset
    _rewrite_manifest(ten, lambda m: m.fields[0].metadata.__setitem__("k", b"\xff\xff"))
    ds, ref = lancenb.dataset(ten), lance.dataset(ten)
    for f in ("lower(s) = '1'", "starts_with(s, '1') OR id + 1 > 8"):
        assert ds.count_rows(filter=f) == ref.count_rows(filter=f) > 0
        assert ds.to_table(filter=f) == ref.to_table(filter=f)
    lancenb.dataset(ten).update({"s": "concat(s, 'x')"}, where="id < 3")
    assert lance.dataset(ten).to_table(filter="id < 3")["s"].to_pylist() == ["0x", "1x", "2x"]
