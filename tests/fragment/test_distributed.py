"""Distributed work on a real engine: a dask.distributed LocalCluster with two worker
processes writes fragments in parallel, the client commits one Overwrite and one
Append, and workers read pickled datasets, fragments and scanners back. pylance (the
oracle) reads the result exactly, and fragments pylance writes on the workers commit
through lancenb. The same flow runs against the moto S3 server when it is available.
"""

import json
import sys

import lance as pylance
import pyarrow as pa
import pytest

import lancenb

distributed = pytest.importorskip("distributed", reason="needs dask[distributed] (dev extras)")
cloudpickle = pytest.importorskip("cloudpickle")
# the tasks below are this module's functions: ship them by value (the workers cannot
# import a test module)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

PARTS = 4
ROWS = 2500


def _part(k: int) -> pa.Table:
    lo = k * ROWS
    ids = pa.array(range(lo, lo + ROWS), pa.int64())
    return pa.table({"id": ids, "name": [f"row-{i}" for i in range(lo, lo + ROWS)],
                     "vec": pa.FixedSizeListArray.from_arrays(
                         pa.array([float(i % 97) for i in range(4 * lo, 4 * (lo + ROWS))],
                                  pa.float32()), 4)})


def _expected(parts) -> pa.Table:
    return pa.concat_tables([_part(k) for k in parts]).combine_chunks()


# -- tasks (run in the worker processes) ----------------------------------------------

def write_task(k: int, uri: str, mode: str, options, per_file: int = 1000):
    import os

    metas = lancenb.fragment.write_fragments(_part(k), uri, mode=mode,
                                             max_rows_per_file=per_file, storage_options=options)
    return os.getpid(), metas


def pylance_write_task(k: int, uri: str, options):
    import lance

    metas = lance.fragment.write_fragments(_part(k), uri, storage_options=options,
                                           max_rows_per_file=ROWS)
    return [json.dumps(m.to_json()) for m in metas]  # what a worker ships: text


def read_task(frag):
    return {"filtered": frag.to_table(columns=["id", "name"], filter="id % 10 = 0"),
            "taken": frag.take([0, 5, 499], columns=["id", "vec"]),
            "count": frag.count_rows("id % 2 = 1"),
            "head": frag.head(3)}


def count_task(ds):
    return ds.version, ds.count_rows(), ds.to_table(columns=["id"], limit=5, offset=2)


def scan_task(scanner):
    return scanner.to_table()



# -- the flow --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=50)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _flow(client, uri: str, lance_options, pylance_options, *, parts: int = PARTS,
          per_file: int = 1000) -> None:
    # 1. workers write fragments of a new dataset; the client commits one Overwrite
    got = client.gather(client.map(write_task, range(parts), uri=uri, mode="create",
                                   options=lance_options, per_file=per_file, pure=False))
    if parts >= 4:
        assert len({pid for pid, _ in got}) == 2  # really two processes
    frags = [m for _, metas in got for m in metas]
    assert len(frags) == parts * -(-ROWS // per_file)
    ds = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Overwrite(_part(0).schema,
                                                                            frags),
                                     storage_options=lance_options)
    assert ds.version == 1
    # 2. more fragments against that version; one Append
    got = client.gather(client.map(write_task, range(parts, 2 * parts), uri=uri, mode="append",
                                   options=lance_options, per_file=per_file, pure=False))
    ds = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append(
        [m for _, metas in got for m in metas]), read_version=1, storage_options=lance_options)
    assert ds.version == 2
    # fragments come back in worker order, which the ids follow: compare sorted
    want = _expected(range(2 * parts))
    ref = pylance.dataset(uri, storage_options=pylance_options)
    assert ref.version == 2
    assert ref.to_table().sort_by("id").equals(want)
    assert ds.to_table().sort_by("id").equals(want)
    # 3. workers read pickled fragments, a dataset and a scanner
    frags = ds.get_fragments()
    results = client.gather(client.map(read_task, frags, pure=False))
    for frag, res in zip(ref.get_fragments(), results):
        assert res["filtered"].equals(frag.to_table(columns=["id", "name"],
                                                    filter="id % 10 = 0"))
        assert res["taken"].equals(frag.take([0, 5, 499], columns=["id", "vec"]))
        assert res["count"] == frag.count_rows("id % 2 = 1")
        assert res["head"].equals(frag.head(3))
    version, n, head = client.submit(count_task, ds, pure=False).result()
    assert (version, n) == (2, 2 * parts * ROWS)
    assert head.equals(ref.to_table(columns=["id"], limit=5, offset=2))
    sc = ds.scanner(columns=["name"], filter="id >= 100 and id < 110", fragments=frags[:1])
    assert client.submit(scan_task, sc, pure=False).result().equals(sc.to_table())
    # 4. pylance writes fragments on the workers, lancenb commits their JSON
    texts = client.gather(client.map(pylance_write_task, range(2 * parts, 2 * parts + 2),
                                     uri=uri, options=pylance_options, pure=False))
    metas = [lancenb.fragment.FragmentMetadata.from_json(t) for ts in texts for t in ts]
    ds = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append(metas), read_version=2,
                                     storage_options=lance_options)
    want = _expected(range(2 * parts + 2))
    assert pylance.dataset(uri, storage_options=pylance_options).to_table().sort_by(
        "id").equals(want)
    assert ds.to_table().sort_by("id").equals(want)


def test_dask_local_cluster_flow(client, tmp_path):
    _flow(client, str(tmp_path / "ds"), None, None)


def test_dask_flow_on_s3(client):
    _s3server = pytest.importorskip("_s3server", reason="needs the moto S3 server helper")
    pytest.importorskip("moto.server", reason="needs moto[server] (dev extras)")
    pytest.importorskip("s3fs", reason="needs s3fs (dev extras)")
    server = _s3server.start()
    try:
        # lancenb takes pylance's key names (aws_access_key_id, aws_endpoint, ...) too
        # (fewer, larger files: every request to the moto server is slow)
        _flow(client, server.uri(), server.pylance_options, server.pylance_options, parts=2,
              per_file=ROWS)
    finally:
        server.stop()
