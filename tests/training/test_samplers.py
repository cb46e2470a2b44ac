"""lancenb.sampler against pylance's lance.sampler on the same pylance-written dataset,
and the exactly-once split between ranks and DataLoader workers (no torch needed)."""

import random

import lance
import lance.sampler
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb import sampler as nbs

ROWS = 1000


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    path = tmp_path_factory.mktemp("samplers") / "ds.lance"
    table = pa.table({"id": np.arange(ROWS), "even": np.arange(ROWS) % 2 == 0,
                      "vec": pa.FixedSizeListArray.from_arrays(
                          pa.array(np.arange(ROWS * 4, dtype=np.float32)), 4)})
    lance.write_dataset(table, path, max_rows_per_file=150)  # 7 fragments
    return str(path)


def ids(batches):
    return [int(v) for b in batches for v in b.column("id").to_numpy()]


@pytest.mark.parametrize("randomize", [False, True])
@pytest.mark.parametrize("kind", ["ShardedFragmentSampler", "ShardedBatchSampler"])
def test_same_rows_in_the_same_order_as_pylance(uri, kind, randomize):
    # pylance shuffles with the global random module: keep the test's state untouched
    state = random.getstate()
    try:
        for rank in range(3):
            theirs = getattr(lance.sampler, kind)(rank, 3, randomize=randomize, seed=7)
            ours = getattr(nbs, kind)(rank, 3, randomize=randomize, seed=7)
            want = ids(theirs(lance.dataset(uri), batch_size=64, columns=["id"]))
            got = ids(ours(lancenb.dataset(uri), batch_size=64, columns=["id"]))
            assert got == want
    finally:
        random.setstate(state)


def test_filtered_batch_sampling_matches_pylance(uri):
    for rank in range(3):
        theirs = lance.sampler.ShardedBatchSampler(rank, 3)
        ours = nbs.ShardedBatchSampler(rank, 3)
        want = ids(theirs(lance.dataset(uri), batch_size=40, columns=["id"], filter="even"))
        got = ids(ours(lancenb.dataset(uri), batch_size=40, columns=["id"], filter="even"))
        assert got == want == list(range(2 * rank, ROWS, 6))


@pytest.mark.parametrize("make", [
    lambda r, w: nbs.ShardedFragmentSampler(r, w, randomize=True, seed=3),
    lambda r, w: nbs.ShardedBatchSampler(r, w, randomize=True, seed=3),
    lambda r, w: nbs.ShardedBatchSampler(r, w),
], ids=["fragments", "batches-shuffled", "batches"])
@pytest.mark.parametrize("world_size,num_workers", [(1, 3), (2, 2), (3, 4), (2, 5)])
@pytest.mark.parametrize("filt", [None, "even"])
def test_ranks_times_workers_read_every_row_once(uri, make, world_size, num_workers, filt):
    ds = lancenb.dataset(uri)
    seen = []
    for rank in range(world_size):
        for worker in range(num_workers):
            seen += ids(make(rank, world_size)(ds, batch_size=32, columns=["id"], filter=filt,
                                               worker_id=worker, num_workers=num_workers))
    want = list(range(0, ROWS, 2)) if filt else list(range(ROWS))
    assert sorted(seen) == want


def test_fewer_fragments_than_workers_splits_fragments(uri):
    # 7 fragments, 2 ranks, 5 workers: rank 1 has 3 fragments, every worker reads some
    ds = lancenb.dataset(uri)
    parts = [ids(nbs.ShardedFragmentSampler(1, 2)(ds, batch_size=32, columns=["id"],
                                                  worker_id=w, num_workers=5))
             for w in range(5)]
    assert all(parts)
    assert sorted(sum(parts, [])) == ids(nbs.ShardedFragmentSampler(1, 2)(
        ds, batch_size=32, columns=["id"]))


@pytest.mark.parametrize("kind", ["ShardedFragmentSampler", "ShardedBatchSampler"])
def test_shuffle_is_seed_plus_epoch(uri, kind):
    ds = lancenb.dataset(uri)

    def order(seed, epoch, filt=None):
        s = getattr(nbs, kind)(0, 1, randomize=True, seed=seed)
        s.set_epoch(epoch)
        return ids(s(ds, batch_size=16, columns=["id"], filter=filt))

    assert order(1, 0) == order(1, 0)
    assert order(1, 1) == order(1, 1)
    assert order(1, 0) != order(1, 1)
    assert sorted(order(1, 1)) == list(range(ROWS))
    if kind == "ShardedBatchSampler":
        assert order(1, 2, "even") == order(1, 2, "even") != order(1, 3, "even")
    state = random.getstate()
    order(5, 5)
    assert random.getstate() == state  # the caller's random state is left alone


def test_fixed_batch_sampler_shuffles_per_epoch():
    s = nbs.ShardedFixedBatchSampler(1, 2, randomize=True, seed=0, batch_size=10,
                                     total_num_rows=1000)
    first = list(s)
    s.set_epoch(1)
    second = list(s)
    assert first != second
    assert sorted(sum(first, [])) == sorted(sum(second, [])) == list(range(500, 1000))
    assert len(s) == 50
    assert list(nbs.ShardedFixedBatchSampler(1, 2, batch_size=2, total_num_rows=6)) == \
        [[3, 4], [5]]


@pytest.mark.parametrize("n,max_takes", [(50, 2048), (600, 64), (ROWS, 2048)])
def test_maybe_sample(uri, n, max_takes):
    ds = lancenb.dataset(uri)
    a = ids(nbs.maybe_sample(ds, n, ["id"], batch_size=100, max_takes=max_takes, seed=4))
    b = ids(nbs.maybe_sample(uri, n, "id", batch_size=100, max_takes=max_takes, seed=4))
    assert a == b
    assert len(a) == len(set(a)) == n
    assert set(a) <= set(range(ROWS))


def test_maybe_sample_refuses_filters_it_cannot_run(uri):
    with pytest.raises(NotImplementedError, match="filter"):
        list(nbs.maybe_sample(uri, 10, ["id"], filt="id > 3"))
    got = list(nbs.maybe_sample(uri, 300, ["vec"], batch_size=64, max_takes=16,
                                filt="vec is not null", seed=1))
    assert sum(b.num_rows for b in got) == 300


def test_bad_ranks_and_workers_name_the_problem(uri):
    with pytest.raises(lancenb.errors.InvalidInputError, match="rank 3 is not in 0..2"):
        nbs.ShardedBatchSampler(3, 3)
    with pytest.raises(lancenb.errors.InvalidInputError, match="worker_id 2"):
        list(nbs.FullScanSampler()(lancenb.dataset(uri), worker_id=2, num_workers=2))


def test_read_ahead_keeps_the_order_and_stops_when_abandoned(uri):
    ds = lancenb.dataset(uri)
    s = nbs.ShardedBatchSampler(0, 1, randomize=True, seed=9)
    one = ids(s(ds, batch_size=50, columns=["id"], batch_readahead=1))
    assert ids(s(ds, batch_size=50, columns=["id"], batch_readahead=8)) == one
    stream = s(ds, batch_size=50, columns=["id"], batch_readahead=8)
    assert next(stream).num_rows == 50
    stream.close()  # the read-ahead pool shuts down, nothing left running


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_read_ahead_threads_keep_the_order(threads):
    import threading

    items = [(i, i + 1) for i in range(50)]

    def read(item):
        return [pa.record_batch({"id": [item[0]]})]

    got = ids(nbs._read_ahead(read, items, 8, threads))
    assert got == list(range(50))
    before = threading.active_count()
    stream = nbs._read_ahead(read, items, 8, threads)
    next(stream)
    stream.close()
    assert threading.active_count() <= before


@pytest.mark.parametrize("columns", [["id", "vec"], {"id": "id", "twice": "id * 2"}])
def test_grouped_run_reads_equal_run_by_run_reads(tmp_path, monkeypatch, columns):
    # small runs are read GROUP_RUNS at a time with one take: the same batches, in the
    # same order, as one read per run (deleted rows skipped alike)
    path = tmp_path / "ds.lance"
    table = pa.table({"id": np.arange(ROWS), "vec": pa.FixedSizeListArray.from_arrays(
        pa.array(np.arange(ROWS * 4, dtype=np.float32)), 4)})
    lance.write_dataset(table, path, max_rows_per_file=150)
    lance.dataset(path).delete("id % 7 = 3")
    ds = lancenb.dataset(str(path))
    for rank in range(2):
        sampler = nbs.ShardedBatchSampler(rank, 2, randomize=True, seed=5)
        grouped = list(sampler(ds, batch_size=32, columns=columns))
        monkeypatch.setattr(nbs, "GROUP_RUNS", 1)
        alone = list(sampler(ds, batch_size=32, columns=columns))
        monkeypatch.undo()
        assert len(grouped) == len(alone) > 4
        assert all(a.equals(b) for a, b in zip(grouped, alone))
