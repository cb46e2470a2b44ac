"""Rows appended after an INVERTED index (no index covers them) answer every kind of
match as pylance answers them: OR and AND matches, phrases (with slop) and fuzzy
matches, with the same scores. Before, AND matches and phrases skipped those rows, and
phrases with slop matched their words in any order (pylance: in query order)."""

import numpy as np
import pyarrow as pa
import pytest

import lancenb
import lancenb.query as nq

lance = pytest.importorskip("lance")
import lance.query as pq  # noqa: E402

VOCAB = "quick brown fox lazy dog the a of apple quik".split()


def _table(n, off, seed):
    rng = np.random.default_rng(seed)
    return pa.table({"id": np.arange(off, off + n),
                     "text": [" ".join(rng.choice(VOCAB, rng.integers(1, 8))) for _ in range(n)]})


def _queries(Q):
    return [Q.MatchQuery("quick brown", "text"),
            Q.MatchQuery("quick brown", "text", operator=Q.FullTextOperator.AND),
            Q.PhraseQuery("quick brown", "text"), Q.PhraseQuery("lazy dog", "text", slop=1),
            Q.PhraseQuery("brown quick fox", "text", slop=2),
            Q.PhraseQuery("fox quick", "text", slop=1),
            Q.PhraseQuery("dog the lazy", "text", slop=3),
            Q.MatchQuery("quikc", "text", fuzziness=1),
            Q.MatchQuery("dgo", "text", fuzziness=2)]


@pytest.fixture(scope="module", params=["lance", "lancenb"])
def uri(request, tmp_path_factory):
    lib = {"lance": lance, "lancenb": lancenb}[request.param]
    uri = str(tmp_path_factory.mktemp("unidx") / "ds")
    lance.write_dataset(_table(300, 0, 1), uri)
    lib.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
    lancenb.write_dataset(_table(120, 300, 2), uri, mode="append")
    return uri


def _run(lib, q, uri):
    t = lib.dataset(uri).to_table(full_text_query=q, columns=["id"])
    order = np.argsort(t["id"].to_numpy())
    return t["id"].to_numpy()[order].tolist(), t["_score"].to_numpy()[order]


@pytest.mark.parametrize("i", range(9))
def test_unindexed_rows_match_as_pylance(uri, i):
    rows, want = _run(lance, _queries(pq)[i], uri)
    got_rows, got = _run(lancenb, _queries(nq)[i], uri)
    assert any(r >= 300 for r in rows) or i >= 4  # (the appended rows take part)
    assert rows or i >= 5
    assert got_rows == rows
    assert np.allclose(got, want, rtol=1e-4)


def test_prefiltered_unindexed_rows_score_as_pylance(uri):
    """With a prefilter, the unindexed rows that pass it alone make the flat
    statistics (pylance scores the filtered scan)."""
    out = []
    for lib in (lance, lancenb):
        t = lib.dataset(uri).to_table(full_text_query="quick", columns=["id"],
                                      filter="id % 3 = 0", prefilter=True)
        order = np.argsort(t["id"].to_numpy())
        out.append((t["id"].to_numpy()[order].tolist(), t["_score"].to_numpy()[order]))
    assert any(r >= 300 for r in out[0][0])
    assert out[1][0] == out[0][0]
    assert np.allclose(out[1][1], out[0][1], rtol=1e-5)
