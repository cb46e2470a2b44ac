"""``count_rows(filter)`` counts the matches without building their positions or rows
(``Filter.count``): the counts are pylance's and the rows a scan with the same filter
returns, for every kind of filter (constants, functions the engine evaluates,
nulls, pyarrow Expressions), with deleted rows, small fragments and both versions."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SQL = ["v < 10", "v >= 990 OR v IS NULL", "x > 0.5 AND v % 7 = 3", "v IS NULL",
       "TRUE", "1 = 0", "v IN (1, 2, NULL)", "abs(v - 500) < 3", "s = 'c3'",
       "s LIKE 'c1%' AND x < 0.3", "v * 2 > 1000"]


def _table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 1000, n).astype(np.int32)
    cats = np.array([f"c{i}" for i in range(20)], dtype=object)
    return pa.table({
        "id": np.arange(start, start + n, dtype=np.int64),
        "v": pa.array(v, mask=rng.random(n) < 0.03),
        "x": rng.random(n),
        "s": pa.array(cats[rng.integers(0, 20, n)].tolist()),
    })


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def uri(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"count-{request.param}") / "ds")
    lancenb.write_dataset(_table(300_000), path, max_rows_per_file=140_000,
                          data_storage_version=request.param)
    for k in range(4):
        lancenb.write_dataset(_table(30, start=400_000 + 30 * k, seed=k + 1), path,
                              mode="append")
    lancenb.dataset(path).delete("id % 101 = 4")
    return path


@pytest.mark.parametrize("flt", SQL)
def test_counts_equal_pylance_and_the_scan(uri, flt):
    ours = lancenb.dataset(uri)
    n = ours.count_rows(flt)
    assert n == lance.dataset(uri).count_rows(flt)
    assert n == ours.to_table(filter=flt, columns=["id"]).num_rows
    assert n == ours.scanner(filter=flt, columns=[]).count_rows()


def test_expressions_and_limits(uri):
    ours = lancenb.dataset(uri)
    expr = (pc.field("v") < 10) | pc.field("v").is_null()
    want = lance.dataset(uri).count_rows(expr)
    assert ours.count_rows(expr) == want == ours.to_table(filter=expr).num_rows
    # a limit or an offset is refused, as pylance refuses it (a count is an aggregate)
    for opts in ({"limit": 5, "offset": 2}, {"offset": 3}):
        for lib in (lance, lancenb):
            with pytest.raises(ValueError, match="Cannot use limit/offset with aggregate"):
                lib.dataset(uri).scanner(filter="v < 10", columns=[], **opts).count_rows()


def test_a_filter_that_is_not_boolean_is_refused(uri):
    with pytest.raises(lancenb.errors.InvalidInputError):
        lancenb.dataset(uri).count_rows(pc.field("v") + 1)
