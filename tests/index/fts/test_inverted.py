"""INVERTED (full-text) indices: built by lancenb and queried by pylance, built by
pylance and queried by lancenb, and each library on its own index: same rows, same
BM25 scores (float32, pylance's formula)."""

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.query import BooleanQuery, BoostQuery, MatchQuery, MultiMatchQuery, Occur, PhraseQuery

lance = pytest.importorskip("lance")

WORDS = ["alpha", "beta", "gamma", "delta", "running", "dogs", "the", "lazy", "Café",
         "naïve", "jumps", "over", "quick", "brown", "fox", "happily", "generously"]


def _docs(n, seed=0, nulls=True):
    rng = np.random.default_rng(seed)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 12)))) for _ in range(n)]
    if nulls:
        docs[3] = None
        docs[7] = ""
    return pa.table({"id": np.arange(n, dtype=np.int64), "text": docs})


def _by_row(t):
    return dict(zip(t.column("id").to_pylist(), t.column("_score").to_pylist()))


def _same(a, b, rel=1e-5):
    ra, rb = _by_row(a), _by_row(b)
    assert set(ra) == set(rb)
    for k in ra:
        assert ra[k] == pytest.approx(rb[k], rel=rel)
    sa, sb = a.column("_score").to_pylist(), b.column("_score").to_pylist()
    assert sa == sorted(sa, reverse=True)
    assert np.allclose(sa, sb, rtol=rel)


QUERIES = ["dog running", "lazy", "the", "nothing-here", "cafe naive", "generous happy",
           '"lazy dogs"', '"quick brown"']


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_cross_library_queries(tmp_path, builder):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(1500), uri, max_rows_per_file=600)
    if builder == "lancenb":
        lancenb.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    else:
        lance.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    for q in QUERIES:
        a = ln.to_table(full_text_query=q, columns=["id"])
        b = pl.to_table(full_text_query=q, columns=["id"], disable_scoring_autoprojection=False)
        _same(a, b)


def test_index_files_and_metadata_read_by_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(300), uri)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("text", "INVERTED", stem=False, remove_stop_words=False)
    pl = lance.dataset(uri)
    assert [d.type_url for d in pl.describe_indices()] == ["/lance.table.InvertedIndexDetails"]
    stats = pl.stats.index_stats("text_idx")
    assert stats["num_indexed_rows"] == 300
    a = ds.to_table(full_text_query="running", columns=["id"])
    b = pl.to_table(full_text_query="running", columns=["id"])
    _same(a, b)


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_query_objects(tmp_path, builder):
    uri = str(tmp_path / "ds")
    t = _docs(800, seed=3).append_column("title", pa.array(
        [f"title {w}" for w in np.random.default_rng(1).choice(WORDS, 800)]))
    lancenb.write_dataset(t, uri)
    lib = lancenb if builder == "lancenb" else lance
    d = lib.dataset(uri)
    d.create_scalar_index("text", "INVERTED", with_position=True)
    d.create_scalar_index("title", "INVERTED")
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    import lance.query as lq
    pairs = [
        (MatchQuery("lazy fox", "text", operator="AND"),
         lq.MatchQuery("lazy fox", "text", operator=lq.FullTextOperator.AND)),
        (MatchQuery("lazy", "text", boost=2.0), lq.MatchQuery("lazy", "text", boost=2.0)),
        (MultiMatchQuery("fox", ["text", "title"]), lq.MultiMatchQuery("fox", ["text", "title"])),
        (BoostQuery(MatchQuery("fox", "text"), MatchQuery("dogs", "text"), negative_boost=0.3),
         lq.BoostQuery(lq.MatchQuery("fox", "text"), lq.MatchQuery("dogs", "text"),
                       negative_boost=0.3)),
        (BooleanQuery([(Occur.MUST, MatchQuery("fox", "text")),
                       (Occur.SHOULD, MatchQuery("lazy", "text")),
                       (Occur.MUST_NOT, MatchQuery("brown", "text"))]),
         lq.BooleanQuery([(lq.Occur.MUST, lq.MatchQuery("fox", "text")),
                          (lq.Occur.SHOULD, lq.MatchQuery("lazy", "text")),
                          (lq.Occur.MUST_NOT, lq.MatchQuery("brown", "text"))])),
    ]
    pairs.append((PhraseQuery("quick brown", "text"), lq.PhraseQuery("quick brown", "text")))
    pairs.append((PhraseQuery("fox lazy", "text", slop=1),
                  lq.PhraseQuery("fox lazy", "text", slop=1)))
    for ours, theirs in pairs:
        _same(ln.to_table(full_text_query=ours, columns=["id"]),
              pl.to_table(full_text_query=theirs, columns=["id"]))


@pytest.mark.parametrize("stable", [False, True])
def test_unindexed_rows_deletions_and_filters(tmp_path, stable):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(600), uri, enable_stable_row_ids=stable)
    lancenb.dataset(uri).create_scalar_index("text", "INVERTED")
    t2 = _docs(200, seed=9, nulls=False)
    t2 = t2.set_column(0, "id", pa.array(np.arange(600, 800, dtype=np.int64)))
    lancenb.write_dataset(t2, uri, mode="append")
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    # unindexed rows are scored flat with statistics over both; pylance counts one
    # document less when those fragments have no deletions (a 1e-3 relative gap)
    _same(ln.to_table(full_text_query="lazy", columns=["id"]),
          pl.to_table(full_text_query="lazy", columns=["id"]), rel=2e-3)
    lancenb.dataset(uri).delete("id % 5 = 0")
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    for q in ["lazy", "fox dogs"]:
        _same(ln.to_table(full_text_query=q, columns=["id"]),
              pl.to_table(full_text_query=q, columns=["id"]))
        a = ln.to_table(full_text_query=q, columns=["id"], filter="id < 300", prefilter=True)
        b = pl.to_table(full_text_query=q, columns=["id"], filter="id < 300", prefilter=True)
        _same(a, b)
        a = ln.to_table(full_text_query=q, columns=["id"], limit=7)
        b = pl.to_table(full_text_query=q, columns=["id"], limit=7)
        assert np.allclose(a.column("_score").to_numpy(), b.column("_score").to_numpy())
        full = ln.to_table(full_text_query=q, columns=["id"])
        page = ln.to_table(full_text_query=q, columns=["id"], limit=5, offset=3)
        assert page.equals(full.slice(3, 5))
    assert ln.to_table(full_text_query="lazy", fast_search=True).num_rows == \
        pl.to_table(full_text_query="lazy", fast_search=True).num_rows


def test_tokenizer_options_match_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(400, seed=5), uri)
    opts = [dict(base_tokenizer="whitespace", lower_case=False, stem=False),
            dict(ascii_folding=False, remove_stop_words=False),
            dict(base_tokenizer="raw", stem=False)]
    for i, o in enumerate(opts):
        lancenb.dataset(uri).create_scalar_index("text", "INVERTED", name=f"ln{i}", **o)
        ln = lancenb.dataset(uri)
        for q in ["Café", "the lazy", "naïve", "running"]:
            a = ln.to_table(full_text_query=q, columns=["id"])
            b = lance.dataset(uri).to_table(full_text_query=q, columns=["id"])
            _same(a, b)
        lancenb.dataset(uri).drop_index(f"ln{i}")


def test_distributed_build_and_stats(tmp_path):
    import uuid

    from lancenb.dataset.operations import LanceOperation
    from lancenb.table.indices import Index

    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(900), uri, max_rows_per_file=300)
    ds = lancenb.dataset(uri)
    uid = str(uuid.uuid4())
    for f in ds.get_fragments():
        ds.create_scalar_index("text", "INVERTED", name="d_idx", replace=False,
                               index_uuid=uid, fragment_ids=[f.fragment_id])
    ds.merge_index_metadata(uid, index_type="INVERTED")
    idx = Index(uuid=uid, name="d_idx", fields=[1], dataset_version=ds.version,
                fragment_ids={0, 1, 2}, index_version=0)
    op = LanceOperation.CreateIndex(new_indices=[idx], removed_indices=[])
    lancenb.LanceDataset.commit(uri, op, read_version=ds.version)
    # committed without index details: recognised by its files, as pylance lists it
    assert [e["type"] for e in lancenb.dataset(uri).list_indices()] == ["Inverted"]
    for q in ["lazy dogs", "fox"]:
        _same(lancenb.dataset(uri).to_table(full_text_query=q, columns=["id"]),
              lance.dataset(uri).to_table(full_text_query=q, columns=["id"]))
    one = str(tmp_path / "one")
    lancenb.write_dataset(_docs(900), one, max_rows_per_file=300)
    lancenb.dataset(one).create_scalar_index("text", "INVERTED")
    # one partition or three: the same statistics, the same scores
    _same(lancenb.dataset(uri).to_table(full_text_query="lazy dogs", columns=["id"]),
          lancenb.dataset(one).to_table(full_text_query="lazy dogs", columns=["id"]))
    ours = lancenb.dataset(one).stats.index_stats("text_idx")
    theirs = lance.dataset(one).stats.index_stats("text_idx")
    for k in ("index_type", "num_indexed_rows", "num_unindexed_rows"):
        assert ours[k] == theirs[k]
    assert ours["indices"][0] == theirs["indices"][0]


def test_include_deleted_rows_refused(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(50), uri)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("text", "INVERTED")
    with pytest.raises(ValueError, match="Cannot include deleted rows"):
        ds.to_table(with_row_id=True, full_text_query="fox", include_deleted_rows=True)


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_long_documents_positions_blocks(tmp_path, builder):
    # a token 300 times in one document: full 128-position blocks; 1500 documents:
    # full 128-document posting blocks
    t = _docs(1500, seed=11)
    text = t.column("text").to_pylist()
    text[10] = " ".join(["quick brown"] * 150 + ["lazy dogs"] * 140)
    text[11] = " ".join(["fox"] * 300)
    t = t.set_column(1, "text", pa.array(text))
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri)
    lib = lancenb if builder == "lancenb" else lance
    lib.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    for q in ['"brown lazy"', '"quick brown"', "fox", '"dogs quick"', '"fox fox fox"', "fox fox"]:
        _same(ln.to_table(full_text_query=q, columns=["id"]),
              pl.to_table(full_text_query=q, columns=["id"]))


LEGACY = "/work/shared/upstream/ref/test_data/0.27.0/legacy_fts_index"


@pytest.mark.skipif(not __import__("os").path.isdir(LEGACY), reason="no 0.27 test data")
def test_legacy_index_and_append_to_old_manifest(tmp_path):
    # pylance 0.27's layout (tokens/invert/docs.lance, no metadata.lance) and a manifest
    # without max_fragment_id: an append took fragment id 0 again before
    import shutil

    for lib in ("lancenb", "pylance"):
        shutil.copytree(LEGACY, tmp_path / lib)
    q = BoostQuery(MatchQuery("puppy", "text"), MatchQuery("happy", "text"), negative_boost=0.5)
    import lance.query as lq
    pq = lq.BoostQuery(lq.MatchQuery("puppy", "text"), lq.MatchQuery("happy", "text"),
                       negative_boost=0.5)
    ln = lancenb.dataset(str(tmp_path / "lancenb"))
    _same_text(ln.to_table(full_text_query=q), lance.dataset(str(tmp_path / "pylance"))
               .to_table(full_text_query=pq))
    new = pa.table({"text": ["new data"]})
    ln = lancenb.write_dataset(new, str(tmp_path / "lancenb"), mode="append")
    pl = lance.write_dataset(new, str(tmp_path / "pylance"), mode="append")
    assert [f.fragment_id for f in ln.get_fragments()] == \
        [f.fragment_id for f in pl.get_fragments()] == [0, 1]
    _same_text(ln.to_table(full_text_query=q), pl.to_table(full_text_query=pq))
    assert ln.to_table(full_text_query="new").num_rows == 1


def _same_text(a, b):
    ra = dict(zip(a.column("text").to_pylist(), a.column("_score").to_pylist()))
    rb = dict(zip(b.column("text").to_pylist(), b.column("_score").to_pylist()))
    assert set(ra) == set(rb)
    for k in ra:
        assert ra[k] == pytest.approx(rb[k], rel=1e-5)


@pytest.mark.parametrize("builder,compactor", [("lancenb", "lancenb"), ("pylance", "lancenb"),
                                               ("lancenb", "pylance")])
def test_compaction_remaps_the_index(tmp_path, builder, compactor):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_docs(1000), uri, max_rows_per_file=100)
    lib = {"lancenb": lancenb, "pylance": lance}
    lib[builder].dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    lancenb.dataset(uri).delete("id % 7 = 0")
    lib[compactor].dataset(uri).optimize.compact_files(target_rows_per_fragment=500)
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    assert set(ln.list_indices()[0]["fragment_ids"]) == {f.fragment_id for f in
                                                         ln.get_fragments()}
    for q in ["lazy", '"quick brown"', "fox dogs"]:
        _same(ln.to_table(full_text_query=q, columns=["id"]),
              pl.to_table(full_text_query=q, columns=["id"]))
        assert 0 not in ln.to_table(full_text_query=q, columns=["id"])["id"].to_pylist()


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_json_documents(tmp_path, builder):
    import json

    import lance.query as lq
    docs = [{"Title": "Harry Potter", "Content": "Once upon a time", "Price": 99,
             "Language": ["english", "french"], "meta": {"ok": True, "n": None}},
            {"Title": "The Hobbit", "Content": "In a hole there lived", "Price": 8.5,
             "Language": ["english"], "meta": {"ok": False}},
            {"Title": "Lazy dogs", "Content": "running dogs", "Price": 99}]
    t = pa.table({"id": [0, 1, 2],
                  "j": pa.array([json.dumps(d) for d in docs], type=pa.json_())})
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri)
    lib = lancenb if builder == "lancenb" else lance
    lib.dataset(uri).create_scalar_index("j", "INVERTED", max_token_length=10)
    ln, pl = lancenb.dataset(uri), lance.dataset(uri)
    for q in ["Content,str,onc", "Language,str,english", "Price,number,99",
              "meta.ok,bool,true", "Title,str,dog;Content,str,run", "Price,number,8.5",
              "meta.n,null,null", "Title,str,harrypotter"]:
        a = ln.to_table(full_text_query=MatchQuery(q, "j"), columns=["id"])
        b = pl.to_table(full_text_query=lq.MatchQuery(q, "j"), columns=["id"])
        _same(a, b)
