"""Fuzzy match queries as pylance 14 answers them: terms taken as typed (no lower case
or stemming), expanded to index tokens within ``fuzziness`` edits in token order,
``max_expansions`` in all, ``prefix_length`` shared characters; ``fuzziness=None`` is
an exact match. Both libraries query both libraries' indices; rows and scores agree."""

import numpy as np
import pyarrow as pa
import pytest

import lancenb
import lancenb.query as nq

lance = pytest.importorskip("lance")
import lance.query as pq  # noqa: E402

DOCS = ["quick brown fox", "apple pie", "apples and pears", "aple", "appl", "ample",
        "Apple Computer", "applet applied apply", "pie chart", "maple syrup", "lapel pin",
        "peach", "appeal", "pineapple", None, "runner running runs"]

CASES = [dict(query="aple", fuzziness=1), dict(query="aple", fuzziness=2),
         dict(query="APLE", fuzziness=1), dict(query="appel", fuzziness=None),
         dict(query="appel", fuzziness=0), dict(query="aple pie", fuzziness=1),
         dict(query="aple", fuzziness=2, max_expansions=2),
         dict(query="aple pie", fuzziness=2, max_expansions=3),
         dict(query="aple", fuzziness=2, prefix_length=2),
         dict(query="running", fuzziness=1), dict(query="apple-pie", fuzziness=1)]


@pytest.fixture(scope="module")
def uris(tmp_path_factory):
    out = {}
    for name, lib in (("lance", lance), ("lancenb", lancenb)):
        uri = out[name] = str(tmp_path_factory.mktemp("fz") / name)
        lance.write_dataset(pa.table({"id": np.arange(len(DOCS)),
                                      "text": pa.array(DOCS, pa.string())}), uri)
        lib.dataset(uri).create_scalar_index("text", "INVERTED")
    return out


def _run(lib, mod, uri, case):
    kw = dict(case)
    q = mod.MatchQuery(kw.pop("query"), "text", **kw)
    t = lib.dataset(uri).to_table(full_text_query=q, columns=["id"])
    order = np.argsort(t["id"].to_numpy())
    return t["id"].to_numpy()[order].tolist(), t["_score"].to_numpy()[order]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_fuzzy_as_pylance(uris, case):
    rows, want = _run(lance, pq, uris["lance"], case)
    for idx in ("lance", "lancenb"):
        got_rows, got = _run(lancenb, nq, uris[idx], case)
        assert got_rows == rows, (idx, got_rows, rows)
        assert np.allclose(got, want, rtol=1e-5), (idx, got, want)
    assert _run(lance, pq, uris["lancenb"], case)[0] == rows
