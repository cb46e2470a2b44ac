"""``LIKE`` through an NGRAM index, as pylance 14: a pattern with wildcards and a
literal run of three or more characters (runs cut by wildcards and by characters a
regular expression escapes) narrows the scan to the rows holding the run's trigrams,
``ScalarIndexQuery: query=[regexp_like(col, Utf8("..."))]@idx(NGram)`` in the plan and
the filter rechecked; ILIKE, NOT LIKE and OR with it scan. Rows always equal the
unindexed scan's, with either library's index."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.scalar.ngram import like_regex, like_runs

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N = 3000
PATTERNS = ["%abc%", "abc%", "%abc", "abc", "%ab%", "%ab%cd%", "%bc1%x%", "%a_bcd%",
            "a%c12", "%c1x.y%", "%1x.y%", "%BC7%", "%bc12x%", "%c1", "%%", "abc12x.yz",
            "%bc\\_1%", "%c(1%"]
MORE = ["txt ILIKE '%abc%'", "txt NOT LIKE '%abc1%'", "txt LIKE '%abc1%' AND z > 5",
        "txt LIKE '%abc1%' OR z > 5", "txt LIKE '%abc1%' OR contains(txt, 'c22')",
        "txt LIKE '%abc1%' AND contains(txt, 'c22')"]


@pytest.fixture(scope="module", params=["lancenb", "pylance"])
def uri(tmp_path_factory, request):
    uri = str(tmp_path_factory.mktemp("ng") / "d")
    vals = [f"abc{i % 97}x.yz" if i % 11 else None for i in range(N)]
    lance.write_dataset(pa.table({"txt": vals, "z": np.arange(N)}), uri,
                        max_rows_per_file=1000)
    (lancenb if request.param == "lancenb" else lance).dataset(uri).create_scalar_index(
        "txt", "NGRAM")
    return uri


def _index_line(ds, flt):
    return [ln.strip() for ln in ds.scanner(filter=flt).explain_plan().splitlines()
            if "ScalarIndexQuery" in ln]


@pytest.mark.parametrize("flt", [f"txt LIKE '{p}'" for p in PATTERNS] + MORE)
def test_plan_and_rows_as_pylance(uri, flt):
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    assert _index_line(ours, flt) == _index_line(theirs, flt)
    want = theirs.to_table(filter=flt, use_scalar_index=False)
    assert ours.to_table(filter=flt) == want
    assert ours.to_table(filter=flt, use_scalar_index=False) == want


def test_the_index_narrows_the_scan(uri):
    sc = lancenb.dataset(uri).scanner(filter="txt LIKE '%bc12x%'")
    assert sc.to_table().num_rows == 28
    assert sc.rows_scanned < N // 10


def test_like_runs_and_regex():
    assert like_runs("%c1x.y%") == ["c1x"] and like_runs("%1x.y%") is None
    assert like_runs("abc") is None and like_runs("a%bcd_efgh") == ["bcd", "efgh"]
    assert like_regex("%c1x.y_") == r".*c1x\.y."


@pytest.mark.parametrize("seed", range(3))
def test_random_patterns_equal_the_scan(tmp_path, seed):
    rng = np.random.default_rng(seed)
    alphabet = np.array(list("abcAB1.-_ %"))
    vals = ["".join(rng.choice(alphabet[:-1], rng.integers(0, 9))) for _ in range(800)]
    uri = str(tmp_path / "d")
    lance.write_dataset(pa.table({"txt": vals}), uri, max_rows_per_file=300)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("txt", "NGRAM")
    for _ in range(40):
        pat = "".join(rng.choice(alphabet, rng.integers(1, 7))).replace("'", "")
        flt = f"txt LIKE '%{pat}%'" if rng.random() < 0.5 else f"txt LIKE '{pat}'"
        want = ds.to_table(filter=flt, use_scalar_index=False)
        assert ds.to_table(filter=flt) == want, flt
        assert lance.dataset(uri).to_table(filter=flt) == want, flt
