"""Takes from flat pages of 1-4 MiB (a 16-d float32 vector column written by
pylance: ~3 MB pages): a take that picks at least one row per 64 KiB of a page it
touches again decodes the page whole and keeps it, so later takes read nothing of
it; a take of a row or two per page keeps reading rows by position. Both give
pylance's rows."""

import lance
import numpy as np
import pyarrow as pa
from _tables import assert_tables_equal

import lancenb
from lancenb.file.formats import v2_1

ROWS = 60_000


def _table():
    rng = np.random.default_rng(11)
    return pa.table({"id": np.arange(ROWS),
                     "vec": pa.FixedSizeListArray.from_arrays(
                         pa.array(rng.random(ROWS * 16, dtype=np.float32)), 16)})


def _reads(ds, rows):
    before = lancenb.iops_counter()
    got = ds.take(rows, columns=["vec"])
    return got, lancenb.iops_counter() - before


def test_dense_takes_decode_large_pages_whole(tmp_path):
    uri = str(tmp_path / "v.lance")
    lance.write_dataset(_table(), uri)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    rng = np.random.default_rng(2)
    counts = []
    for _ in range(4):
        rows = np.sort(rng.choice(ROWS, 256, replace=False))
        got, n = _reads(ours, rows)
        assert_tables_equal(got, theirs.take(rows, columns=["vec"]))
        counts.append(n)
    # cold: rows by position (many requests); then whole pages, then nothing to read
    assert counts[0] > 16 and counts[-1] == 0, counts


def test_sparse_takes_do_not_decode_pages_whole(tmp_path):
    # 32 rows of a 3.8 MB page: fewer than one per 64 KiB, read by position every time
    assert 32 * v2_1.LARGE_PAGE_BYTES_PER_ROW < 3 << 20
    uri = str(tmp_path / "v.lance")
    lance.write_dataset(_table(), uri)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    rng = np.random.default_rng(3)
    counts = []
    for _ in range(3):
        rows = np.sort(rng.choice(ROWS, 32, replace=False))
        got, n = _reads(ours, rows)
        assert_tables_equal(got, theirs.take(rows, columns=["vec"]))
        counts.append(n)
    assert min(counts) >= 8, counts
