"""The ``jieba/<name>`` base tokenizer: segmentation by dictionary in search mode.

Cross-checked with pylance on a dictionary of our own: each library builds an index on
the same texts and each queries both indices; the rows and BM25 scores agree. The texts
avoid runs of two or more ideographs outside the dictionary (pylance's hidden Markov
model regroups those; lancenb keeps one token per character: see the module docstring
of lancenb.index.fts.jieba).
"""

import json

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.fts.jieba import JiebaModel, load_model

lance = pytest.importorskip("lance")

WORDS = {"我们": 98740, "都": 202780, "有": 423765, "光明": 1219, "的": 318825,
         "前途": 1263, "前": 62779, "途": 857, "北京": 34488, "大学": 20025,
         "北京大学": 2053, "学生": 17860, "中国": 120000, "人民": 50000,
         "中国人民": 3000, "银行": 20000, "中国人民银行": 900, "人民银行": 500}

TEXTS = ["我们都有光明的前途", "光明的前途", "北京大学学生", "中国人民银行 北京",
         "Hello 北京大学 world, 3.5% 的 学生", "中国人民", None,
         "学生的前途 abc-def 光明"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    root = tmp_path / "models"
    (root / "jieba" / "default").mkdir(parents=True)
    (root / "jieba" / "default" / "dict.txt").write_text(
        "".join(f"{w} {f} n\n" for w, f in WORDS.items()), encoding="utf-8")
    (root / "jieba" / "with_user").mkdir()
    (root / "jieba" / "with_user" / "config.json").write_text(
        json.dumps({"main": "../default/dict.txt", "users": ["user.txt"]}))
    (root / "jieba" / "with_user" / "user.txt").write_text("光明的前途 318825 n\n",
                                                           encoding="utf-8")
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(root))
    return root


def test_segmentation_by_hand():
    m = JiebaModel(WORDS)
    # the most probable path; a run of single steps that is a word is cut in characters
    assert m.cut("北京大学学生") == ["北京大学", "学生"]
    assert m.cut("光明的前途") == ["光明", "的", "前途"]
    # search mode: dictionary 2- and 3-grams of long words first, at their offsets
    toks = m.search_tokens("中国人民银行")
    assert toks == [("中国", 0), ("人民", 2), ("银行", 4), ("中国人民银行", 0)]
    # text outside ideographs: letters/digits stay together, the rest one token each
    assert m.cut("Hi 3.5%, a-b") == ["Hi", " ", "3.5%", ",", " ", "a", "-", "b"]


def test_user_dictionary_and_cache(home):
    m = load_model("jieba/with_user")
    assert m.cut("光明的前途") == ["光明的前途"]
    assert load_model("jieba/with_user") is m  # read once while the files are unchanged
    assert load_model("jieba") is load_model("jieba/default")


def _query_all(uri, lib, query):
    t = lib.dataset(uri).to_table(full_text_query=query, with_row_id=True)
    order = np.lexsort((t["_rowid"].to_numpy(), -t["_score"].to_numpy()))
    return (t["_rowid"].to_numpy()[order].tolist(),
            np.round(t["_score"].to_numpy()[order], 4).tolist())


@pytest.mark.parametrize("model", ["jieba/default", "jieba/with_user"])
def test_both_libraries_agree(tmp_path, home, model):
    table = pa.table({"text": pa.array(TEXTS, pa.string())})
    uris = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = str(tmp_path / f"{name}_{model.replace('/', '_')}")
        lance.write_dataset(table, uri)
        lib.dataset(uri).create_scalar_index("text", "INVERTED", base_tokenizer=model)
        uris[name] = uri
    queries = ["北京", "大学", "北京大学", "中国人民银行", "人民", "hello", "学生 前途",
               "光明的前途", "的前", "abc", "3.5%"]
    for q in queries:
        want = _query_all(uris["lance"], lance, q)
        for idx in ("lance", "lancenb"):
            got = _query_all(uris[idx], lancenb, q)
            assert got[0] == want[0], (q, idx, got, want)
            assert np.allclose(got[1], want[1], rtol=1e-3), (q, idx, got, want)
        assert _query_all(uris["lancenb"], lance, q)[0] == want[0], q
