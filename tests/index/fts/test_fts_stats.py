"""Full-text searches report the index parts they read (``scan_stats_callback``'s
``parts_loaded``) and ``prewarm_index`` loads an INVERTED index into the dataset's
session, for indices built by either library, as pylance does."""

import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")


def _parts(ds, q):
    got = []
    t = ds.scanner(full_text_query=q, scan_stats_callback=got.append).to_table()
    assert len(got) == 1
    return got[0].parts_loaded, t.num_rows


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_parts_loaded_and_prewarm(tmp_path, builder):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"text": [f"word w{i % 5}" for i in range(60)]}), uri)
    (lancenb.dataset if builder == "lancenb" else lance.dataset)(uri).create_scalar_index(
        "text", "INVERTED", with_position=True)
    for lib in (lancenb, lance):
        ds = lib.dataset(uri)
        cold, n = _parts(ds, "word")
        assert cold > 0 and n == 60
        if lib is lancenb:  # (lancenb holds the whole index now; pylance reads per token)
            assert _parts(ds, "w1")[0] == 0
        assert _parts(lib.dataset(uri), "word")[0] > 0  # (a new session reads again)
        warm = lib.dataset(uri)
        warm.prewarm_index("text_idx")
        assert _parts(warm, "word") == (0, 60)
        assert warm.to_table(full_text_query=lancenb.query.PhraseQuery("word w1", "text")
                             if lib is lancenb else lance.query.PhraseQuery("word w1", "text")
                             ).num_rows == 12


def test_analyze_plan_counts_documents_scored(tmp_path):
    """``index_comparisons``: the indexed documents scored, after the prefilter (pylance
    14's MatchQuery node counts them before it on its posting format 2, 3 here; its
    plan also holds the prefilter's ScalarIndexQuery with comparisons of its own)."""
    uri = str(tmp_path / "ds")
    texts = ["lance database test", "full text search", "lance search text"] + ["other"] * 7
    lancenb.write_dataset(pa.table({"id": list(range(1, 11)), "text": texts}), uri)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("text", "INVERTED")
    for flt, n, rows in (("id <= 1", 1, 1), ("id <= 5", 3, 3)):
        plan = ds.scanner(full_text_query="lance search text", filter=flt,
                          prefilter=True).analyze_plan()
        ref = lance.dataset(uri).scanner(full_text_query="lance search text", filter=flt,
                                         prefilter=True).analyze_plan()
        assert f"index_comparisons={n}," in plan and "index_comparisons=3," in ref
        assert f"output_rows={rows}" in plan


def test_indexed_prefilter_in_plans(tmp_path):
    """A prefilter the scalar indices answer shows as pylance's ``ScalarIndexQuery``
    under the full-text node; one they do not stays a ``Prefilter``."""
    uri = str(tmp_path / "ds")
    texts = ["lance database test", "full text search", "lance search text"] + ["x"] * 97
    lance.write_dataset(pa.table({"id": list(range(1, 101)), "text": texts}), uri)
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lance.dataset(uri).create_scalar_index("text", "INVERTED")
    for lib in (lancenb, lance):
        plan = lib.dataset(uri).scanner(full_text_query="lance search text", filter="id <= 1",
                                        prefilter=True).explain_plan()
        assert "ScalarIndexQuery: query=[id <= 1]@id_idx(BTree)" in plan, plan
    plan = lancenb.dataset(uri).scanner(full_text_query="lance", filter="text = 'x'",
                                        prefilter=True).explain_plan()
    assert "Prefilter: filter=[text = 'x']" in plan
