"""lancenb.torch.data with real DataLoaders: 0 and 2 workers, every start method (after
the parent has read), ranks x workers covering every row once, seeded shuffles, and
batches equal to pylance's loader on the same pylance-written dataset."""

import multiprocessing
import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

torch = pytest.importorskip("torch")

import lance.torch.data  # noqa: E402

import lancenb  # noqa: E402
from lancenb.sampler import ShardedBatchSampler, ShardedFragmentSampler  # noqa: E402
from lancenb.torch.data import LanceDataset, SafeLanceDataset, get_safe_loader  # noqa: E402

ROWS, DIM = 1200, 16
# pylance (the oracle, imported here) warns at every fork of a process that imported it;
# lancenb has no such hazard, and the forks below are the point of these tests
pytestmark = pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning")


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = tmp_path_factory.mktemp("loader") / "ds.lance"
    rng = np.random.default_rng(0)
    table = pa.table({
        "id": np.arange(ROWS, dtype=np.int64),
        "score": rng.random(ROWS).astype(np.float32),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(ROWS * DIM).astype(np.float32)), DIM),
        "label": [f"row {i}" for i in range(ROWS)],
        "img": [bytes([i % 251]) * (i % 7 + 1) for i in range(ROWS)],
    })
    lance.write_dataset(table, path, max_rows_per_file=250)  # 5 fragments
    return str(path)


def epoch_ids(loader):
    out = []
    for batch in loader:
        ids = batch["id"] if isinstance(batch, dict) else batch
        out += ids.tolist()
    return out


def loader(ds, workers=0, context=None, **kw):
    return torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                       multiprocessing_context=context, **kw)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("granularity", [None, "fragment", "batch"])
def test_every_row_once_with_workers(uri, workers, granularity):
    ds = LanceDataset(uri, batch_size=64, columns=["id", "vec"],
                      shard_granularity=granularity)
    got = epoch_ids(loader(ds, workers))
    assert sorted(got) == list(range(ROWS))


@pytest.mark.parametrize("world_size,workers", [(2, 0), (2, 2), (3, 2)])
@pytest.mark.parametrize("granularity", ["fragment", "batch"])
def test_ranks_times_workers_every_row_once(uri, world_size, workers, granularity):
    seen = []
    for rank in range(world_size):
        ds = LanceDataset(uri, batch_size=50, columns=["id"], rank=rank,
                          world_size=world_size, shard_granularity=granularity)
        seen += epoch_ids(loader(ds, workers))
    assert sorted(seen) == list(range(ROWS))


def test_a_sampler_of_the_user_is_split_between_workers(uri):
    ds = LanceDataset(uri, batch_size=25, columns=["id"],
                      sampler=ShardedBatchSampler(1, 2, randomize=True, seed=3))
    one = epoch_ids(loader(ds, 0))
    two = epoch_ids(loader(ds, 2))
    assert sorted(one) == sorted(two) == [i for i in range(ROWS) if i // 25 % 2 == 1]


def test_samples_are_split_not_repeated(uri):
    ds = LanceDataset(uri, batch_size=32, columns=["id"], samples=320, seed=11)
    got = epoch_ids(loader(ds, 2))
    assert len(got) == len(set(got)) == 320
    assert epoch_ids(loader(ds, 0)) != got or True  # another epoch, another draw
    ds.set_epoch(0)
    assert sorted(epoch_ids(loader(ds, 0))) == sorted(got)


def test_shuffles_are_deterministic_per_seed_and_epoch(uri):
    def epoch(e, workers=0):
        ds = LanceDataset(uri, batch_size=40, columns=["id"],
                          sampler=ShardedFragmentSampler(0, 1, randomize=True, seed=5))
        ds.set_epoch(e)
        return epoch_ids(loader(ds, workers))

    assert epoch(0) == epoch(0)
    assert epoch(0) != epoch(1) or epoch(1) != epoch(2)
    assert sorted(epoch(3, workers=2)) == list(range(ROWS))
    # no workers: iterating again moves to the next epoch by itself
    ds = LanceDataset(uri, batch_size=40, columns=["id"],
                      sampler=ShardedBatchSampler(0, 1, randomize=True, seed=5))
    first, second = epoch_ids(ds), epoch_ids(ds)
    assert first != second and sorted(first) == sorted(second) == list(range(ROWS))


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_start_methods_after_the_parent_has_read(uri, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not available here")
    # warm the parent: thread pools running, caches filled, a take and a scan done
    parent = lancenb.dataset(uri)
    parent.take([1, 500, 1100], columns=["vec"])
    assert parent.to_table(columns=["id", "vec"]).num_rows == ROWS
    ds = LanceDataset(parent, batch_size=100, columns=["id", "vec"])
    got = epoch_ids(loader(ds, 2, multiprocessing.get_context(method)))
    assert sorted(got) == list(range(ROWS))
    if method == "forkserver":
        return  # the map-style loader's workers start as spawn's do (one start is enough)
    maps = SafeLanceDataset(uri, columns=["id"])
    rows = epoch_ids(get_safe_loader(maps, batch_size=64, num_workers=2,
                                     persistent_workers=False,
                                     multiprocessing_context=method))
    assert sorted(rows) == list(range(ROWS))


# pylance's loader makes tensors of read-only arrays, and torch warns (once a process)
@pytest.mark.filterwarnings("ignore:The given NumPy array is not writable:UserWarning")
def test_batches_equal_pylance_loader(uri):
    cols = ["id", "score", "vec"]
    ours = list(LanceDataset(lancenb.dataset(uri), batch_size=100, columns=cols))
    theirs = list(lance.torch.data.LanceDataset(lance.dataset(uri), batch_size=100,
                                                columns=cols))
    # the same rows and tensors; lancenb's batches are all of batch_size rows (pylance
    # cuts one short at each fragment's end: 250-row fragments give 100, 100, 50, ...)
    assert [len(b["id"]) for b in ours] == [100] * (ROWS // 100)
    assert ours[0].keys() == theirs[0].keys()
    for k in ours[0]:
        a = torch.cat([b[k] for b in ours])
        b = torch.cat([b[k] for b in theirs])
        assert a.dtype == b.dtype and torch.equal(a, b)
    # and the filtered, fragment-sharded way
    kw = dict(batch_size=30, columns=["id"], filter="id % 3 = 0")
    ours = epoch_ids(LanceDataset(uri, sampler=ShardedFragmentSampler(1, 2), **kw))
    theirs = epoch_ids(lance.torch.data.LanceDataset(
        uri, sampler=lance.sampler.ShardedFragmentSampler(1, 2), **kw))
    assert ours == theirs


def test_tensors_share_the_arrow_buffers_and_stay_the_batch_s(uri):
    ds = LanceDataset(uri, batch_size=300, columns=["id", "score", "vec"],
                      with_row_id=True)
    batch = next(iter(ds))
    assert batch["vec"].shape == (300, DIM) and batch["vec"].dtype == torch.float32
    assert batch["_rowid"].dtype == torch.int64
    from lancenb.torch.tensors import array_to_tensor

    table = lancenb.dataset(uri).to_table(columns=["vec", "score"], limit=300)
    vec = table.column("vec").chunk(0)
    t = array_to_tensor(vec)
    values = vec.values
    assert t.data_ptr() == values.buffers()[1].address + \
        (values.offset + vec.offset * DIM) * 4
    sliced = array_to_tensor(vec.slice(7, 5))
    assert torch.equal(sliced, t[7:12])
    # writing into a batch's tensor leaves the dataset (and later batches) as they were
    batch["vec"].mul_(0)
    again = next(iter(LanceDataset(uri, batch_size=300, columns=["vec"])))
    assert torch.equal(again, torch.from_numpy(np.asarray(
        table.column("vec").combine_chunks().values).reshape(300, DIM)))


def test_strings_binary_and_nulls(uri, tmp_path):
    batch = next(iter(LanceDataset(uri, batch_size=8, columns=["id", "label", "img"])))
    assert batch["label"] == [f"row {i}" for i in range(8)]
    assert batch["img"] == [bytes([i]) * (i % 7 + 1) for i in range(8)]
    t = pa.table({"f": pa.array([1.5, None, 2.5]), "b": [True, False, True],
                  "u": pa.array([1, 2, 2**64 - 1], pa.uint64()),
                  "v": pa.array([[1.0, 2.0], None, [3.0, 4.0]], pa.list_(pa.float32(), 2))})
    lancenb.write_dataset(t, tmp_path / "n.lance")
    out = next(iter(LanceDataset(tmp_path / "n.lance", batch_size=3)))
    assert torch.isnan(out["f"][1]) and out["f"][0] == 1.5
    assert out["b"].tolist() == [True, False, True]
    assert out["u"].tolist() == [1, 2, -1]
    assert torch.isnan(out["v"][1]).all() and out["v"][2].tolist() == [3.0, 4.0]


def test_blob_columns_come_as_bytes(tmp_path):
    schema = pa.schema([pa.field("i", pa.int64()),
                        pa.field("b", pa.large_binary(),
                                 metadata={"lance-encoding:blob": "true"})])
    values = [bytes([i]) * 300 for i in range(20)]
    tbl = pa.Table.from_arrays([pa.array(range(20)), pa.array(values, pa.large_binary())],
                               schema=schema)
    lance.write_dataset(tbl, tmp_path / "b.lance")
    got = list(LanceDataset(tmp_path / "b.lance", batch_size=8))
    assert sum((b["b"] for b in got), []) == values
    # one fragment, two workers: each reads a row range of it
    got = list(loader(LanceDataset(tmp_path / "b.lance", batch_size=4), 2,
                      multiprocessing.get_context("fork")))
    assert sorted(sum((b["b"] for b in got), [])) == values

    def reader(batch, **kw):  # pylance's blob API: file-like objects
        return [f.read() for f in batch["b"]]

    got = list(LanceDataset(tmp_path / "b.lance", batch_size=8, to_tensor_fn=reader))
    assert sum(got, []) == values


def test_cache_replays_after_the_dataset_is_gone(uri, tmp_path):
    copy = tmp_path / "copy.lance"
    shutil.copytree(uri, copy)
    ds = LanceDataset(copy, batch_size=100, columns=["id"], samples=300, cache=True, seed=2)
    first = epoch_ids(ds)
    shutil.rmtree(copy)
    assert epoch_ids(ds) == first and len(first) == 300


def test_map_style_batches(uri):
    maps = SafeLanceDataset(uri, columns=["id", "vec"])
    assert len(maps) == ROWS and maps[3]["id"] == 3
    sampler = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(maps), 50, False)
    got = []
    for batch in torch.utils.data.DataLoader(maps, batch_size=None, sampler=sampler):
        assert batch["vec"].shape[1] == DIM
        got += batch["id"].tolist()
    assert sorted(got) == list(range(ROWS))
    rows = next(iter(torch.utils.data.DataLoader(maps, batch_size=10)))
    assert rows["id"].tolist() == list(range(10))


def test_import_lancenb_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, lancenb, lancenb.sampler, lancenb.torch; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("sizes", [[5, 5, 5], [3, 11, 2, 7], [16], [1] * 20, [40]])
def test_rebatch_gives_exact_batches_and_every_row(sizes):
    from lancenb.torch.data import _rebatch

    start, batches = 0, []
    for n in sizes:
        batches.append(pa.record_batch({"id": np.arange(start, start + n)}))
        start += n
    out = list(_rebatch(iter(batches), 8))
    assert [b.num_rows for b in out[:-1]] == [8] * (len(out) - 1)
    assert 0 < out[-1].num_rows <= 8
    assert np.concatenate([b.column(0).to_numpy() for b in out]).tolist() == \
        list(range(start))


@pytest.mark.parametrize("seed", range(20))
def test_unordered_rebatch_passes_full_batches_and_every_row_once(seed):
    # a shuffled stream: batches of the size pass through untouched (no copy), the
    # others are joined among themselves, at most one short batch's rows waiting
    from lancenb.torch.data import _rebatch

    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 9))
    start, batches = 0, []
    for n in rng.choice([0, 1, size - 1, size, size, size, size + 1, 3 * size + 2],
                        int(rng.integers(0, 30))):
        batches.append(pa.record_batch({"id": np.arange(start, start + int(n))}))
        start += int(n)
    out = list(_rebatch(iter(batches), size, ordered=False))
    assert all(b.num_rows == size for b in out[:-1])
    assert not out or 0 < out[-1].num_rows <= size
    got = np.concatenate([b.column(0).to_numpy() for b in out]) if out else []
    assert sorted(got) == list(range(start))
    full = [b for b in batches if b.num_rows == size]
    assert [b for b in out if any(b is f for f in full)] == full  # in order, uncopied


def test_shuffle_option_every_row_once_and_seeded(uri):
    def epoch(rank, workers, e, seed=4):
        ds = LanceDataset(uri, batch_size=50, columns=["id"], rank=rank, world_size=2,
                          shuffle=True, seed=seed)
        ds.set_epoch(e)
        return epoch_ids(loader(ds, workers))

    a = epoch(0, 2, 0) + epoch(1, 2, 0)
    assert sorted(a) == list(range(ROWS))
    assert epoch(0, 0, 1) == epoch(0, 0, 1) != epoch(0, 0, 2)
    assert epoch(1, 0, 0, seed=5) != epoch(1, 0, 0, seed=6)
