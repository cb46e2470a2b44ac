"""Texts without tokens (empty, blank, stop words only) are not documents of an
INVERTED index, as in pylance: they must not count in BM25's document count and
average length, so scores equal pylance's on corpora that have them."""

import numpy as np
import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

TEXTS = ["hello world", "", "   ", None, "the", "a b", "x", "hello there world hello",
         "of and the", "world"]


def _scores(uri, lib, q):
    t = lib.dataset(uri).to_table(full_text_query=q, with_row_id=True)
    order = np.argsort(t["_rowid"].to_numpy())
    return t["_rowid"].to_numpy()[order].tolist(), t["_score"].to_numpy()[order]


def test_tokenless_texts_are_not_documents(tmp_path):
    uris = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = uris[name] = str(tmp_path / name)
        lance.write_dataset(pa.table({"text": pa.array(TEXTS, pa.string())}), uri)
        lib.dataset(uri).create_scalar_index("text", "INVERTED")
    stats = lancenb.dataset(uris["lancenb"]).stats.index_stats("text_idx")
    want_stats = lance.dataset(uris["lance"]).stats.index_stats("text_idx")
    assert stats["num_indexed_rows"] == want_stats["num_indexed_rows"]
    for q in ("hello", "world", "b", "x", "hello world"):
        rows, want = _scores(uris["lance"], lance, q)
        for idx in ("lance", "lancenb"):
            got_rows, got = _scores(uris[idx], lancenb, q)
            assert got_rows == rows, (q, idx)
            assert np.allclose(got, want, rtol=1e-5), (q, idx, got, want)


def test_tokenless_texts_with_a_spilling_build(tmp_path, monkeypatch):
    """The same when the build spills its postings (a tiny memory budget)."""
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", str(1 << 16))
    texts = [["", "the", "a b", "hello world"][i % 4] + f" w{i % 50}" * (i % 3 == 0)
             for i in range(4000)]
    uris = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = uris[name] = str(tmp_path / name)
        lance.write_dataset(pa.table({"text": texts}), uri)
        lib.dataset(uri).create_scalar_index("text", "INVERTED")
    for q in ("hello", "w7", "b w3"):
        rows, want = _scores(uris["lance"], lance, q)
        got_rows, got = _scores(uris["lancenb"], lancenb, q)
        assert got_rows == rows and np.allclose(got, want, rtol=1e-5), q


def test_only_tokenless_texts(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"text": ["", "the", "of a", None]}), uri)
    lancenb.dataset(uri).create_scalar_index("text", "INVERTED")
    for lib in (lance, lancenb):
        assert lib.dataset(uri).to_table(full_text_query="the").num_rows == 0
    assert lancenb.dataset(uri).to_table(full_text_query="hello").num_rows == 0
