"""lancenb.inspect / explain / validate on real files: pylance-written 2.0/2.1/2.2 files
and datasets (layouts asked for through field metadata, compared with pylance's and
lancenb's page descriptions), lancenb's own files (explanations), damaged copies."""

import json
import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.file import LanceFileReader as PyReader
from lance.file import LanceFileWriter as PyWriter

import lancenb
from lancenb.file import LanceFileReader, LanceFileWriter

N = 3000


def _table() -> pa.Table:
    rng = np.random.default_rng(0)
    words = np.array(["alpha", "beta", "gamma", "delta"])
    return pa.table({
        "ints": pa.array(np.arange(N) % 100, pa.int64()),
        "cat": pa.array(words[rng.integers(0, 4, N)]),
        "big": pa.array([("x" * 300) + str(i) for i in range(N)]),
        "zstd": pa.array([f"value {i % 50}" for i in range(N)]),
        "nulls": pa.array([None] * N, pa.int32()),
        "lst": pa.array([[i, i + 1] if i % 3 else None for i in range(N)], pa.list_(pa.int32())),
    })


def _schema_with_requests(t: pa.Table) -> pa.Schema:
    md = {"big": {"lance-encoding:structural-encoding": "fullzip"},
          "zstd": {"lance-encoding:compression": "zstd"}}
    return pa.schema([f.with_metadata(md.get(f.name)) for f in t.schema])


# what the writer was asked for / must choose, per column: (layout, text in the encoding)
EXPECT = {"ints": ("mini-block", "inline_bitpacking"),
          "cat": ("mini-block", "dict="),
          "big": ("full-zip", "full_zip"),
          "zstd": ("mini-block", "general("),
          "nulls": ("constant/all-null", "constant"),
          "lst.item": ("mini-block", "rep=")}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inspect")
    t = _table()
    t = t.cast(_schema_with_requests(t))
    out = {}
    for v in ("2.1", "2.2"):
        p = str(d / f"pylance-{v}.lance")
        with PyWriter(p, t.schema, version=v) as w:
            w.write_batch(t)
        out[v] = p
    p = str(d / "pylance-2.0.lance")
    with PyWriter(p, version="2.0") as w:
        w.write_batch(t.select(["ints", "cat", "lst"]))
    out["2.0"] = p
    p = str(d / "lancenb.lance")
    # 2.1 (explain is asked for 2.1 below; its default follows the writer's, 2.2)
    with LanceFileWriter(p, t.schema, version="2.1") as w:
        w.write_batch(t)
    out["lancenb"] = p
    return out


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_files_show_their_layouts(files, version):
    r = lancenb.inspect(files[version])
    json.dumps(r)
    assert r["version"] == version and r["num_rows"] == N
    assert r["readable_by"] == {"lancenb": True, "pylance14": True}
    cols = {c["name"]: c for c in r["columns"]}
    assert set(cols) == set(EXPECT)
    ours = LanceFileReader(files[version]).metadata().columns
    theirs = PyReader(files[version]).metadata().columns
    for i, (name, (layout, text)) in enumerate(EXPECT.items()):
        c = r["columns"][i]
        assert c["name"] == name
        for j, page in enumerate(c["pages"]):
            # the description is the one the reader derives from the same protobuf
            assert page["description"] == ours[i].pages[j].description
            assert [b["size"] for b in page["buffers"]] == [
                b.size for b in theirs[i].pages[j].buffers]
            if name == "nulls" and version == "2.1":
                continue  # pylance 2.1 may use any layout for an all-null column
            assert page["layout"] == layout, (name, page["description"])
            assert text in page["description"] or text in json.dumps(page["encoding"]), name
            kind = {"mini-block": "MiniBlock", "full-zip": "FullZip",
                    "constant/all-null": ("Constant", "AllNull")}[layout]
            kinds = kind if isinstance(kind, tuple) else (kind,)
            assert any(k in theirs[i].pages[j].encoding for k in kinds)
    assert cols["cat"]["pages"][0]["dictionary_items"] == 4
    assert cols["cat"]["pages"][0]["chunks"] >= 1
    assert cols["lst.item"]["pages"][0]["repetition_index_bytes"] > 0
    zstd = cols["zstd"]["pages"][0]["encoding"]
    assert "COMPRESSION_ALGORITHM_ZSTD" in json.dumps(zstd)
    # explanations: lancenb's strategy re-run on the decoded pages
    page = cols["ints"]["pages"][0]
    assert page["uncompressed_bytes"] == N * 8
    # pylance 2.2 dictionary-encodes low-cardinality integers, lancenb does not (yet)
    assert page["explanation"]["reproduced"] is (version == "2.1")
    assert cols["zstd"]["pages"][0]["explanation"]["overrides"] == {
        "lance-encoding:compression": "zstd"}


def test_2_0_file_is_described(files):
    r = lancenb.inspect(files["2.0"])
    json.dumps(r)
    assert r["version"] == "2.0" and r["readable_by"]["lancenb"] is True
    assert "2.0 file" in r["notes"][0]
    assert [c["name"] for c in r["columns"]] == ["ints", "cat", "lst", "lst.item"]
    pages = [p for c in r["columns"] for p in c["pages"]]
    assert all(p["layout"] == "2.0 array encoding" for p in pages)
    assert "dictionary" in r["columns"][1]["pages"][0]["description"]
    assert all("explanation" not in p for p in pages)
    # the footer and sizes agree with pylance
    md = PyReader(files["2.0"]).metadata()
    assert r["num_rows"] == md.num_rows
    assert [[b["size"] for b in p["buffers"]] for p in r["columns"][0]["pages"]] == [
        [b.size for b in p.buffers] for p in md.columns[0].pages]


def test_lancenb_files_are_explained(files):
    r = lancenb.inspect(files["lancenb"])
    for c in r["columns"]:
        for p in c["pages"]:
            e = p["explanation"]
            assert e["reproduced"] is True, (c["name"], p["description"])
            assert e["steps"] and e["stats"]["slots"] > 0
    cols = {c["name"]: c for c in r["columns"]}
    cat = cols["cat"]["pages"][0]["explanation"]
    assert any(s.startswith("try_dictionary") and s.endswith("yes") for s in cat["steps"])
    assert cat["stats"]["cardinality_estimate"] == 4
    big = cols["big"]["pages"][0]["explanation"]
    assert big["overrides"] == {"lance-encoding:structural-encoding": "fullzip"}
    assert "forced by metadata" in big["steps"][0]
    z = cols["zstd"]["pages"][0]["explanation"]
    assert "try_dictionary: skipped (compression=zstd)" in z["steps"]
    assert any(s.startswith("compression=zstd") for s in z["steps"])
    assert cols["nulls"]["pages"][0]["explanation"]["steps"] == ["all values null: all-null page"]


def test_explain_in_memory_matches_written_file(files):
    t = _table()
    t = t.cast(_schema_with_requests(t))
    e = lancenb.explain(t, version="2.1")
    assert lancenb.explain(t)["version"] == "2.2"  # the writer's default
    written = {c["name"]: c["pages"][0]["description"]
               for c in lancenb.inspect(files["lancenb"], explain=False)["columns"]}
    assert {c["column"]: c["pages"][0]["chosen"] for c in e["columns"]} == written
    one = lancenb.explain(t, field="zstd", version="2.1")
    assert [c["column"] for c in one["columns"]] == ["zstd"]
    assert one["columns"][0]["field_metadata"] == {"lance-encoding:compression": "zstd"}
    arr = lancenb.explain(pa.array(np.zeros(1000, np.int64)))
    steps = arr["columns"][0]["pages"][0]["steps"]
    assert any(s.startswith("try_rle: 1 runs") for s in steps)
    # pages are cut where the writer cuts them
    many = lancenb.explain(pa.table({"x": np.arange(300_000)}).combine_chunks(),
                           page_budget_bytes=1 << 20)
    assert len(many["columns"][0]["pages"]) == 1  # one batch: flushed once
    batches = pa.Table.from_batches(pa.table({"x": np.arange(300_000)}).to_batches(
        max_chunksize=100_000))
    many = lancenb.explain(batches, page_budget_bytes=1 << 20)
    assert [p["rows"] for p in many["columns"][0]["pages"]] == [200_000, 100_000]


@pytest.fixture(scope="module")
def pylance_dataset(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("ds") / "ds.lance")
    t = _table().select(["ints", "cat"])
    lance.write_dataset(t, uri, max_rows_per_file=2000, data_storage_version="2.2")
    lance.write_dataset(t.slice(0, 100), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("ints < 10")
    ds.tags.create("v2", 2)
    return uri


def test_pylance_dataset(pylance_dataset):
    r = lancenb.inspect(pylance_dataset)
    json.dumps(r)
    ds = lance.dataset(pylance_dataset)
    assert r["kind"] == "dataset" and r["version"] == ds.version == 3
    assert [v["operation"] for v in r["versions"]] == ["overwrite", "append", "delete"]
    assert [v["version"] for v in r["versions"]] == [v["version"] for v in ds.versions()]
    assert all(v["writer"].startswith("lance ") and v["timestamp"] for v in r["versions"])
    assert r["rows"] == ds.count_rows()
    assert [f["physical_rows"] for f in r["fragments"]] == [2000, 1000, 100]
    assert [f["deleted_rows"] for f in r["fragments"]] == [
        f.metadata.deletion_file.num_deleted_rows if f.metadata.deletion_file else 0
        for f in ds.get_fragments()]
    assert r["feature_flags"]["reader_names"] == ["deletion_files"]
    assert r["data_storage_version"] == "2.2" and r["file_versions"] == ["2.2"]
    assert r["readable_by"] == {"lancenb": True, "pylance14": True}
    assert r["tags"]["v2"]["version"] == 2
    with_files = lancenb.inspect(pylance_dataset, files=True, version=1)
    assert with_files["version"] == 1 and len(with_files["fragments"]) == 2
    f0 = with_files["fragments"][0]["files"][0]["inspect"]
    assert f0["version"] == "2.2" and f0["num_rows"] == 2000
    assert f0["columns"][1]["pages"][0]["dictionary_items"] == 4


def test_legacy_dataset(tmp_path):
    uri = str(tmp_path / "old")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri, data_storage_version="legacy")
    r = lancenb.inspect(uri, files=True)
    assert r["file_versions"] == ["0.1"]
    assert r["readable_by"] == {"lancenb": True, "pylance14": True}
    f = r["fragments"][0]["files"][0]["inspect"]
    assert f["version"] == "0.1" and f["num_rows"] == 3 and f["batch_offsets"] == [0, 3]
    assert f["columns"][0]["pages"][0]["items"] == 3


# -- validate ----------------------------------------------------------------------------
def _damage(path: str, at: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(data)


def test_validate_clean(files, pylance_dataset):
    for p in (files["2.1"], files["2.2"], files["lancenb"], pylance_dataset):
        r = lancenb.validate(p)
        assert r["ok"] and not r["problems"], r["problems"]
        assert r["checked"]["pages"] > 0
    r = lancenb.validate(files["2.0"])
    assert r["ok"] and not r["not_decoded"] and r["checked"]["pages"] > 0


def test_validate_finds_every_damaged_page(files, tmp_path):
    p = str(tmp_path / "bad.lance")
    with open(files["lancenb"], "rb") as f:
        raw = f.read()
    with open(p, "wb") as f:
        f.write(raw)
    cols = {c["name"]: c for c in lancenb.inspect(p, explain=False)["columns"]}
    cat0 = cols["cat"]["pages"][0]["buffers"][0]["position"]  # chunk metadata
    big0 = cols["big"]["pages"][0]["buffers"][0]["position"]  # zipped values
    _damage(p, cat0, b"\xff" * 4)
    _damage(p, big0, b"\xff" * 8)
    r = lancenb.validate(p)
    assert not r["ok"]
    found = {(x["column"], x["page"], x["offset"]) for x in r["problems"]}
    assert ("cat", 0, cat0) in found and ("big", 0, big0) in found
    assert all(x["file"] == p and x["message"] for x in r["problems"])
    # damaged column metadata: named with its column and metadata offset
    meta = cols["ints"]["metadata_position"]
    _damage(p, meta, b"\xff" * 6)
    r = lancenb.validate(p)
    assert any(x["column"] == "ints" and x["offset"] == meta for x in r["problems"])
    assert {"cat", "big"} <= {x["column"] for x in r["problems"]}


def test_validate_damaged_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    t = _table().select(["ints", "cat"])
    lance.write_dataset(t, uri, max_rows_per_file=1000)
    ds = lance.dataset(uri)
    ds.delete("ints = 5")
    frags = lancenb.inspect(uri)["fragments"]
    data0 = os.path.join(uri, "data", frags[0]["files"][0]["path"])
    _damage(data0, os.path.getsize(data0) - 4, b"XXXX")  # footer magic
    os.remove(os.path.join(uri, "data", frags[2]["files"][0]["path"]))
    deletion = os.path.join(uri, frags[1]["deletion_file"]["path"])
    with open(deletion, "wb") as f:
        f.write(b"not an arrow file")
    r = lancenb.validate(uri)
    assert not r["ok"]
    msgs = [(x["file"], x["message"], x["offset"]) for x in r["problems"]]
    assert any(f.endswith(frags[0]["files"][0]["path"]) and "magic" in m
               and o == os.path.getsize(data0) - 4 for f, m, o in msgs)
    assert any(f.endswith(frags[2]["files"][0]["path"]) and "missing" in m for f, m, _ in msgs)
    assert any(f.endswith(frags[1]["deletion_file"]["path"]) for f, _, _ in msgs)
    assert r["checked"]["deletion_files"] == 3
