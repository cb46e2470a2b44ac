"""``batch_readahead``: batches read ahead on a background thread give the same batches,
stop when the consumer stops, and raise the reader's errors in the consumer."""

from __future__ import annotations

import os
import threading

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read.readahead import read_ahead
from lancenb.errors import InvalidInputError, LanceError


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("readahead") / "ds")
    t = pa.table({"a": np.arange(10_000), "s": [f"v{i % 7}" for i in range(10_000)]})
    return lancenb.write_dataset(t, uri, max_rows_per_file=1500)


def _readers() -> int:
    return sum(t.name == "lancenb-readahead" for t in threading.enumerate())


@pytest.mark.parametrize("kw", [{}, {"filter": "a % 3 = 0"}, {"limit": 2500, "offset": 700},
                                {"strict_batch_size": True}])
def test_same_batches_as_without(ds, kw):
    want = list(ds.scanner(batch_size=1000, **kw).to_batches())
    got = list(ds.scanner(batch_size=1000, batch_readahead=3, **kw).to_batches())
    assert [b.num_rows for b in got] == [b.num_rows for b in want]
    assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want))
    assert ds.to_table(batch_readahead=2, **kw).equals(ds.to_table(**kw))
    assert _readers() == 0


def test_consumer_stopping_early_stops_the_thread(ds):
    it = ds.scanner(batch_size=100, batch_readahead=2).to_batches()
    first = next(it)
    assert first.num_rows == 100 and _readers() == 1
    it.close()
    assert _readers() == 0


def test_reader_errors_reach_the_consumer(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(pa.table({"a": np.arange(100)}), uri, max_rows_per_file=50)
    path = ds.get_fragments()[1].data_files()[0].path
    os.remove(os.path.join(uri, "data", path))
    it = lancenb.dataset(uri).scanner(batch_size=10, batch_readahead=2).to_batches()
    with pytest.raises(LanceError):
        list(it)
    assert _readers() == 0


def test_bad_values_are_refused(ds):
    with pytest.raises(InvalidInputError, match="batch_readahead"):
        ds.scanner(batch_readahead=-1)


def test_read_ahead_keeps_order_and_bounds():
    produced = []

    def source():
        for i in range(50):
            produced.append(i)
            yield i

    it = read_ahead(source(), 4)
    assert next(it) == 0
    assert list(it) == list(range(1, 50))
    assert produced == list(range(50))
