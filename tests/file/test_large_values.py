"""Values of 256 bytes and more go to full-zip pages; both directions with pylance."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal, with_nulls

from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")


def _table(n, size, seed=0, nulls=True):
    rng = np.random.default_rng(seed)
    lens = rng.integers(size // 2, size + 1, n)
    lens[::17] = 0  # some empty values
    vals = [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in lens]
    blob = pa.array(vals, pa.binary())
    raw = rng.integers(0, 256, n * 300, dtype=np.uint8)
    fsb = pa.Array.from_buffers(pa.binary(300), n, [None, pa.py_buffer(raw)])
    cols = {"blob": with_nulls(blob, rng) if nulls else blob,
            "lblob": pa.array(vals, pa.large_binary()),
            "text": pa.array(["ü" * (int(k) // 2) for k in lens]),
            "fsb300": with_nulls(fsb, rng) if nulls else fsb}
    return pa.table(cols)


@pytest.mark.parametrize("size,n", [(300, 3000), (40 * 1024, 60), (2 * 1024 * 1024, 3)])
def test_large_values_roundtrip_and_pylance_reads(tmp_path, size, n):
    t = _table(n, size)
    path = str(tmp_path / "big.lance")
    with LanceFileWriter(path, t.schema) as w:
        for i in range(0, n, max(1, n // 3)):
            w.write_batch(t.slice(i, max(1, n // 3)))
    r = LanceFileReader(path)
    kinds = {d.describe().split(":")[0] for d in r._backend._column_pages(0)}
    assert kinds == {"full_zip"}
    assert_tables_equal(r.read_all().to_table(), t)
    idx = [0, n // 2, n - 1]
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.take_rows([n - 1, 0, 0]).to_table(), t.take([n - 1, 0, 0]))
    p = lance_file.LanceFileReader(path)
    assert_tables_equal(p.read_all().to_table(), t)
    assert_tables_equal(p.take_rows(idx).to_table(), t.take(idx))


def test_full_zip_take_costs_at_most_two_reads(tmp_path):
    t = _table(2000, 400)
    path = str(tmp_path / "fz.lance")
    with LanceFileWriter(path, t.schema) as w:
        w.write_batch(t)
    r = LanceFileReader(path, columns=["blob"])
    r.take_rows([1000])  # initialisation: column metadata is parsed once
    before = r._io.stats.reads
    assert_tables_equal(r.take_rows([1234]).to_table(), t.select(["blob"]).take([1234]))
    assert r._io.stats.reads - before <= 2


def test_lancenb_reads_pylance_full_zip_pages(tmp_path):
    t = _table(2000, 300, seed=4, nulls=False).select(["blob", "fsb300"])
    path = str(tmp_path / "p.lance")
    w = lance_file.LanceFileWriter(path, t.schema, version="2.1")
    w.write_batch(t)
    w.close()
    r = LanceFileReader(path)
    for i in range(2):
        assert {d.describe() for d in r._backend._column_pages(i)} <= {
            "full_zip:variable(flat(32))", "full_zip:flat(2400)"}
    assert_tables_equal(r.read_all().to_table(), t)
    idx = [0, 1, 999, 1999]
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))


def test_per_value_compressed_pages_damaged(tmp_path):
    """FSST and per-value zstd full-zip pages: flipped bytes give a LanceError (a
    CorruptFileError for bad data), never a crash."""
    from lancenb.errors import CorruptFileError, LanceError

    rng = np.random.default_rng(8)
    words = [f"w{i} ".encode() for i in range(40)]
    text = [b"".join(words[j] for j in rng.integers(0, 40, k)) for k in [120] * 150 + [9000] * 5]
    t = pa.table({"fsst": pa.array([x.decode() for x in text[:150]] * 2),
                  "zstd": pa.array((text[150:] + [None] * 145) * 2, pa.binary())})
    path = tmp_path / "pv.lance"
    with LanceFileWriter(str(path)) as w:
        w.write_batch(t)
    r = LanceFileReader(str(path))
    assert [c.pages[0].description.split(":")[1].split("(")[0] for c in r.metadata().columns] == \
        ["fsst", "general"]
    good = path.read_bytes()
    corrupt = 0
    for col in r.metadata().columns:
        for buf in col.pages[0].buffers:
            for _ in range(8):
                bad = bytearray(good)
                bad[buf.position + int(rng.integers(0, buf.size))] ^= int(rng.integers(1, 256))
                p = tmp_path / "b.lance"
                p.write_bytes(bytes(bad))
                try:
                    rr = LanceFileReader(str(p))
                    rr.read_all().to_table()
                    rr.take_rows([0, 151, 299]).to_table()
                except CorruptFileError:
                    corrupt += 1
                except LanceError:
                    pass
    assert corrupt > 0
