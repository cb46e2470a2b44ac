"""Page statistics written into data files, and the scans they let lancenb skip."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb.file import LanceFileReader
from lancenb.file.statistics import DEFAULT_ROWS_PER_PAGE, STATS_KEY

N = 5 * DEFAULT_ROWS_PER_PAGE + 123


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    rng = np.random.default_rng(3)
    ids = np.arange(N, dtype=np.int64)
    f = rng.standard_normal(N)
    f[rng.random(N) < 0.01] = np.nan
    t = pa.table({
        "id": ids,
        "f": pa.array(f, mask=rng.random(N) < 0.05),
        "s": pa.array([f"key-{i // 1000:05d}" for i in ids]),
        "ts": pa.array(ids * 10**6, pa.timestamp("us")),
        "sparse": pa.array(np.where(ids < DEFAULT_ROWS_PER_PAGE, None, ids % 7)),
    })
    u = str(tmp_path_factory.mktemp("stats") / "ds")
    lancenb.write_dataset(t, u, max_rows_per_file=3 * DEFAULT_ROWS_PER_PAGE)
    return u


def test_statistics_are_in_the_data_files(uri):
    ds = lancenb.dataset(uri)
    frag = ds.get_fragments()[0]
    path = frag.data_files()[0].path
    reader = LanceFileReader(f"{uri}/data/{path}")
    assert STATS_KEY.encode() in reader.schema_full.metadata
    rpp, stats = frag.page_stats()
    assert rpp == DEFAULT_ROWS_PER_PAGE
    assert [s.min for s in stats["id"]] == [0, rpp, 2 * rpp]
    assert stats["sparse"][0].null_count == rpp
    assert stats["f"][0].min < 0 < stats["f"][0].max  # NaN ignored
    # pylance reads the files (buffer and metadata key ignored) exactly
    assert_tables_equal(lance.dataset(uri).to_table(), ds.to_table())


@pytest.mark.parametrize("flt, skipped_at_least", [
    ("id >= 200000 AND id < 200010", 5),
    ("id < 0", 6),
    ("s = 'key-00300'", 5),
    ("ts > TIMESTAMP '1970-01-04 00:00:00'", 3),
    ("sparse IS NOT NULL AND id < 1000", 5),
    ("sparse = 3 OR id = 5", 0),
    ("f < -1e9", 6),
    ("f > 1e9", 0),  # never pruned: NaN sorts above every number and stats skip NaN
    ("f != 0.5", 0),  # never pruned: NaN != 0.5
    ("id % 2 = 0", 0),
])
def test_pruned_scans_equal_full_evaluation(uri, flt, skipped_at_least):
    ds = lancenb.dataset(uri)
    sc = ds.scanner(filter=flt, with_row_id=True)
    got = sc.to_table()
    assert sc.pages_skipped >= skipped_at_least
    full = ds.to_table(with_row_id=True)
    want = full.filter(ds.scanner(filter=flt)._expr)
    assert_tables_equal(got, want)
    assert got.num_rows == lance.dataset(uri).count_rows(flt)


def test_pruning_with_deletions(uri, tmp_path):
    import shutil

    u = str(tmp_path / "copy")
    shutil.copytree(uri, u)
    ds = lancenb.dataset(u)
    ds.delete("id >= 150000 AND id < 150005")
    got = ds.to_table(filter="id >= 149990 AND id < 150010")["id"].to_pylist()
    assert got == [i for i in range(149990, 150010) if not 150000 <= i < 150005]
    assert ds.take([149995])["id"].to_pylist() == [149995]


def test_pylance_files_have_no_stats_and_are_not_pruned(tmp_path):
    u = str(tmp_path / "pl")
    lance.write_dataset(pa.table({"id": np.arange(1000)}), u)
    ds = lancenb.dataset(u)
    assert ds.get_fragments()[0].page_stats() is None
    sc = ds.scanner(filter="id < 3")
    assert sc.to_table()["id"].to_pylist() == [0, 1, 2] and sc.pages_skipped == 0


def test_types_without_min_max_kernel_get_statistics(tmp_path):
    """duration and float16 have no Arrow min/max kernel (found by the Spark tests):
    their statistics are computed on the stored integers and through float32."""
    t = pa.table({"d": pa.array([1, 2, None], pa.duration("ms")),
                  "h": pa.array(np.array([1, 2, 3], np.float16)), "i": [1, 2, 3]})
    ds = lancenb.write_dataset(t, str(tmp_path / "d"))
    assert_tables_equal(ds.to_table(), t)
    assert_tables_equal(lance.dataset(str(tmp_path / "d")).to_table(), t)
    stats = ds.get_fragments()[0].page_stats()[1]
    assert set(stats) == {"d", "h", "i"}
    assert (stats["d"][0].min.value, stats["d"][0].max.value) == (1, 2)
    assert (stats["h"][0].min, stats["h"][0].max) == (1.0, 3.0)
    assert ds.to_table(filter="d IS NULL")["i"].to_pylist() == [3]
    assert ds.to_table(filter="i > 2")["i"].to_pylist() == [3]


def test_damaged_statistics_buffer_is_corrupt_file_error(tmp_path):
    """Every 8-byte word of a file's statistics buffer overwritten in turn (with ones,
    then zeros): a pruned read returns or raises CorruptFileError naming the buffer,
    never an Arrow or Unicode error (found by the dataset-file corruption fuzz:
    damaged offsets and strings in the Arrow stream)."""
    import json
    import shutil

    from lancenb.errors import CorruptFileError, LanceError

    t = pa.table({"id": np.arange(3000, dtype=np.int64),
                  "s": pa.array([f"v{i // 7:05d}" for i in range(3000)]),
                  "b": pa.array([bytes([i % 251]) * 3 for i in range(3000)])})
    src = str(tmp_path / "src")
    lancenb.write_dataset(t, src)
    frag = lancenb.dataset(src).get_fragments()[0]
    name = frag.data_files()[0].path
    reader = LanceFileReader(f"{src}/data/{name}")
    gb = json.loads(reader.schema_full.metadata[STATS_KEY.encode()])["global_buffer"]
    stats = reader.read_global_buffer(gb)
    with open(f"{src}/data/{name}", "rb") as f:
        raw = f.read()
    at = raw.find(stats)
    assert at >= 0 and len(stats) > 64
    refused = 0
    for fill in (b"\xff" * 8, b"\x00" * 8):
        for k in range(0, len(stats) - 8, 8):
            d = str(tmp_path / f"m{k}")
            shutil.copytree(src, d)
            damaged = raw[:at + k] + fill + raw[at + k + 8:]
            with open(f"{d}/data/{name}", "wb") as f:
                f.write(damaged)
            try:
                lancenb.dataset(d).to_table(filter="s = 'v00100' AND id > 5").to_pylist()
            except CorruptFileError as e:
                refused += "statistics" in str(e)
            except LanceError:
                pass
            shutil.rmtree(d)
    assert refused > 10
