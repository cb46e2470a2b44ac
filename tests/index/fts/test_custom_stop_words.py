"""``custom_stop_words`` of an INVERTED index: the same documents found by lancenb and
pylance, each library building the index (the list replaces the English one, is compared
after lower-casing and stemming, before ASCII folding, and only when
``remove_stop_words``)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancenb

DOCS = pa.table({"text": ["The Running dogs ran", "a lazy brown dog running",
                          "quick dogs run the Café", "über cafe naïve"]})
QUERIES = ["the", "running", "run", "dogs", "dog", "lazy", "café", "cafe", "über", "uber",
           "naive", "naïve", "a"]
CASES = {
    "mixed_case": dict(custom_stop_words=["Running", "dogs", "the"]),
    "stems": dict(custom_stop_words=["run", "dog"]),
    "no_stem": dict(custom_stop_words=["running", "dogs"], stem=False),
    "not_removing": dict(custom_stop_words=["run"], remove_stop_words=False),
    "empty": dict(custom_stop_words=[]),
    "accents": dict(custom_stop_words=["café", "uber", "über"], stem=False),
    "folded": dict(custom_stop_words=["cafe", "naïve"], stem=False),
    "stemmed_form": dict(custom_stop_words=["lazi"]),
    "other_language": dict(custom_stop_words=["dog"], language="French", stem=False),
}


def _found(lib, uri: str, kw: dict) -> list:
    ds = lib.write_dataset(DOCS, uri)
    ds.create_scalar_index("text", "INVERTED", **kw)
    return [sorted(ds.to_table(full_text_query=q, with_row_id=True)["_rowid"].to_pylist())
            for q in QUERIES]


@pytest.mark.parametrize("case", sorted(CASES))
def test_custom_stop_words_like_pylance(tmp_path, case):
    kw = CASES[case]
    want = _found(lance, str(tmp_path / "lance"), kw)
    assert _found(lancenb, str(tmp_path / "lancenb"), kw) == want


@pytest.mark.parametrize("case", ["stems", "accents"])
def test_each_reads_the_others_stop_words(tmp_path, case):
    """The list is kept in the index's parameters: queries on an index built by the
    other library drop the same words."""
    kw = CASES[case]
    want = _found(lance, str(tmp_path / "a"), kw)
    _found(lancenb, str(tmp_path / "b"), kw)
    _found(lance, str(tmp_path / "c"), kw)
    for uri, lib in ((tmp_path / "b", lance), (tmp_path / "c", lancenb)):
        ds = lib.dataset(str(uri))
        got = [sorted(ds.to_table(full_text_query=q, with_row_id=True)["_rowid"].to_pylist())
               for q in QUERIES]
        assert got == want
    stats = lance.dataset(str(tmp_path / "b")).stats.index_stats("text_idx")
    assert stats["indices"][0]["params"]["custom_stop_words"] == kw["custom_stop_words"]


def test_custom_stop_words_with_jieba(tmp_path, monkeypatch):
    """Dictionary words of a jieba model as stop words."""
    home = tmp_path / "models"
    (home / "jieba" / "default").mkdir(parents=True)
    (home / "jieba" / "default" / "dict.txt").write_text(
        "我们 98740 r\n都 202780 d\n有 423765 v\n光明 1219 n\n的 318825 uj\n前途 1263 n\n",
        encoding="utf-8")
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    docs = pa.table({"text": ["我们都有光明的前途", "光明的前途", "我们有"]})
    out = []
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        ds = lib.write_dataset(docs, str(tmp_path / name))
        ds.create_scalar_index("text", "INVERTED", base_tokenizer="jieba/default",
                               custom_stop_words=["我们", "的"])
        out.append([sorted(ds.to_table(full_text_query=q, with_row_id=True)["_rowid"]
                           .to_pylist()) for q in ("我们", "的", "光明", "前途", "有")])
    assert out[0] == out[1]
    assert out[0][0] == [] and out[0][2] == [0, 1]
