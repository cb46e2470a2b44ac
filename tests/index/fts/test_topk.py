"""Top-k full-text queries (``limit`` without a post-filter) take the pruned path
(MaxScore over posting blocks): the same rows and float32 scores, in the same order, as
scoring every match and sorting (``limit=None``), on both libraries' indices, with
deleted rows, unindexed rows, a prefilter, several partitions and an offset; and the
same rows as pylance's own top-k."""

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.query import MatchQuery

lance = pytest.importorskip("lance")
lance_query = pytest.importorskip("lance.query")


def _zipf_docs(n, seed):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(300)])
    lengths = rng.integers(1, 40, n)
    words = vocab[(rng.zipf(1.2, int(lengths.sum())) - 1) % len(vocab)]
    cuts = np.cumsum(lengths)[:-1]
    return pa.table({"id": np.arange(n, dtype=np.int64),
                     "text": [" ".join(w) for w in np.split(words, cuts)]})


def _full_top(ds, q, k, offset=0, **kw):
    t = ds.to_table(full_text_query=q, columns=["id"], **kw)
    ids = np.asarray(t.column("id"))
    s = np.asarray(t.column("_score"))
    rows = np.asarray(ds.to_table(full_text_query=q, columns=["id"], with_row_id=True, **kw)
                      .column("_rowid"))
    order = np.lexsort((rows, -s.astype(np.float64)))[offset:offset + k]
    return ids[order].tolist(), s[order].tolist()


QUERIES = ["w0x", "w1x w2x", "w3x w40x w200x", "w5x w5x w7x", "w250x", "nothing",
           MatchQuery("w1x w9x", "text", boost=2.5)]


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_topk_equals_full_scoring(tmp_path, builder):
    t = _zipf_docs(3000, 1)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t.slice(0, 2000), uri, max_rows_per_file=700)
    build = lancenb.dataset if builder == "lancenb" else lance.dataset
    build(uri).create_scalar_index("text", "INVERTED")
    lancenb.write_dataset(t.slice(2000), uri, mode="append")  # (unindexed rows)
    lancenb.dataset(uri).delete("id % 7 = 3")
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    for q in QUERIES:
        for k, offset, kw in ((10, 0, {}), (1, 0, {}), (25, 5, {}),
                              (10, 0, {"filter": "id < 1500", "prefilter": True})):
            got = ln.to_table(full_text_query=q, columns=["id"], limit=k, offset=offset, **kw)
            want = _full_top(ln, q, k, offset, **kw)
            assert got.column("id").to_pylist() == want[0], (q, k, kw)
            assert got.column("_score").to_pylist() == want[1], (q, k, kw)
            if k == 10 and not offset:
                pq = q if isinstance(q, str) else lance_query.MatchQuery(q.query, q.column,
                                                                         boost=q.boost)
                ref = pl.to_table(full_text_query=pq, columns=["id"], limit=k, **kw)
                assert got.num_rows == ref.num_rows  # (pylance orders ties its own way)
                if not ref.num_rows:
                    continue
                assert np.allclose(got.column("_score").to_numpy(),
                                   ref.column("_score").to_numpy(), rtol=1e-5), (q, kw)


def test_topk_over_index_segments(tmp_path):
    """Two segments of one index (a distributed build): one heap across partitions."""
    t = _zipf_docs(1500, 2)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri, max_rows_per_file=500)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("text", "INVERTED")
    lancenb.dataset(uri).delete("id = 4")
    ln = lancenb.dataset(uri)
    for q in QUERIES:
        got = ln.to_table(full_text_query=q, columns=["id"], limit=12)
        want = _full_top(ln, q, 12)
        assert (got.column("id").to_pylist(), got.column("_score").to_pylist()) == want
