"""INVERTED index builds in bounded memory: posting runs spilled to disk past the
budget (``LANCE_MEM_POOL_SIZE``) and merged token range by token range give the same
index files as a build in memory, which both libraries query as pylance's own."""

import glob
import os

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError
from lancenb.index.fts import build, spill

lance = pytest.importorskip("lance")


def _docs(n, seed=0):
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(5000)] + ["running", "houses", "the"])
    lengths = rng.integers(3, 40, n)
    words = vocab[(rng.zipf(1.15, int(lengths.sum())) - 1) % len(vocab)]
    docs = [" ".join(w) for w in np.split(words, np.cumsum(lengths)[:-1])]
    for i in range(0, n, 97):
        docs[i] = None
    return pa.table({"id": np.arange(n), "text": docs})


def _files(uri):
    (idx,) = glob.glob(f"{uri}/_indices/*/")
    out = {}
    for f in sorted(os.listdir(idx)):
        with open(idx + f, "rb") as fh:
            out[f] = fh.read()
    return out


@pytest.mark.parametrize("with_position", [False, True])
def test_spilled_build_equals_in_memory_build(tmp_path, monkeypatch, with_position):
    t = _docs(12000 if not with_position else 4000)
    uris = [str(tmp_path / k) for k in ("small", "default")]
    for uri in uris:
        lancenb.write_dataset(t, uri, max_rows_per_file=3000)
    spills = []
    real = spill.Runs._spill

    def counted(self):
        spills.append(len(self.mem))
        real(self)

    monkeypatch.setattr(spill.Runs, "_spill", counted)
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", str(2 << 20))
    lancenb.dataset(uris[0]).create_scalar_index("text", "INVERTED",
                                                 with_position=with_position)
    assert sum(spills) >= 2  # (runs went to disk, then were merged by token ranges)
    monkeypatch.delenv("LANCE_MEM_POOL_SIZE")
    n = len(spills)
    lancenb.dataset(uris[1]).create_scalar_index("text", "INVERTED",
                                                 with_position=with_position)
    assert len(spills) == n  # (fits the default budget: built in memory)
    small, default = _files(uris[0]), _files(uris[1])
    assert small.keys() == default.keys()
    for name in small:
        assert small[name] == default[name], name
    queries = ["w0x w1x", "w3x", "running house", "w4999x w7x"]
    if with_position:
        queries.append('"w0x w1x"')
    for q in queries:  # (every match: ties at a limit may be cut differently)
        want = lance.dataset(uris[1]).to_table(full_text_query=q, columns=["id", "_score"])
        want = dict(zip(want.column("id").to_pylist(), want.column("_score").to_pylist()))
        for lib in (lance, lancenb):
            got = lib.dataset(uris[0]).to_table(full_text_query=q, columns=["id", "_score"])
            got = dict(zip(got.column("id").to_pylist(), got.column("_score").to_pylist()))
            assert got.keys() == want.keys() and want
            assert np.allclose([got[k] for k in want], list(want.values()), rtol=1e-6)


def test_runs_stay_under_budget_and_ranges_under_their_size():
    rng = np.random.default_rng(3)
    runs = spill.Runs(1 << 20, with_positions=True)
    ntok, ndocs, seen = 300, 0, []
    try:
        for _ in range(40):
            n = int(rng.integers(100, 400))
            tid = rng.integers(0, ntok, n * 20)
            doc = np.sort(rng.integers(0, n, n * 20))
            pos = np.arange(len(doc)) - np.searchsorted(doc, doc)
            tok, d, f, p = spill.chunk_postings(tid, doc, pos, n)
            seen.append((tok, d + ndocs, f, p))
            runs.add(tok, d + np.uint32(ndocs), f, p)
            ndocs += n
            assert runs.mem_bytes <= runs.budget
        assert runs.did_spill
        got = list(runs.ranges(5000))
    finally:
        runs.close()
    # every range but single-token ones within the size; together every posting once,
    # sorted by (token, document), positions with their postings
    tok = np.concatenate([s[0] for s in seen])
    order = np.lexsort((np.concatenate([s[1] for s in seen]), tok))
    doc = np.concatenate([s[1] for s in seen])[order]
    freqs = np.concatenate([s[2] for s in seen])
    pos = spill.regroup_positions(freqs, np.concatenate([s[3] for s in seen]), order)
    at = 0
    for lo, hi, offsets, d, f, po, p in got:
        assert offsets[-1] <= 5000 or hi - lo == 1
        assert np.array_equal(d, doc[at:at + len(d)])
        assert np.array_equal(f, freqs[order][at:at + len(d)])
        assert np.array_equal(p, pos[po[0] + int(np.sum(freqs[order][:at])):][:len(p)])
        at += len(d)
    assert at == len(doc) and got[-1][1] == ntok


def test_memory_pool_size_must_be_a_number(monkeypatch):
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", "lots")
    with pytest.raises(InvalidInputError, match="LANCE_MEM_POOL_SIZE"):
        build.memory_budget()
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", str(64 << 20))
    assert build.memory_budget() == 64 << 20
