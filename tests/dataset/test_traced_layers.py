"""A scan and a write, traced call by call: no function of a layer below
``lancenb.dataset`` (file, table, expr, io, encodings, kernels, index) calls back up
into it, directly or through a callback the dataset handed down (issue 31)."""

import sys
import threading
from collections import Counter

import numpy as np
import pyarrow as pa

import lancenb

_LOWER = ("lancenb.file", "lancenb.table", "lancenb.expr", "lancenb.io", "lancenb.encodings",
          "lancenb.kernels", "lancenb.index")


def _traced(fn):
    """Run ``fn``; return ``Counter`` of (caller module, callee module, function) for
    every call from a lower layer into ``lancenb.dataset``, and the modules entered."""
    up, seen = Counter(), set()

    def prof(frame, event, arg):
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("lancenb"):
            return
        seen.add(callee)
        back = frame.f_back
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if callee.startswith("lancenb.dataset") and caller.startswith(_LOWER):
            up[(caller, callee, frame.f_code.co_name)] += 1

    sys.setprofile(prof)
    threading.setprofile(prof)
    try:
        result = fn()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return up, seen, result


def _table(n):
    return pa.table({"a": np.arange(n), "b": np.arange(n) * 0.5,
                     "s": [f"v{i % 97}" for i in range(n)]})


def test_filtered_scan_over_20_fragments_calls_nothing_back_up(tmp_path):
    uri = str(tmp_path / "t")
    lancenb.write_dataset(_table(20_000), uri, max_rows_per_file=1_000)
    ds = lancenb.dataset(uri)
    up, seen, got = _traced(lambda: ds.to_table(columns=["a", "s"], filter="b > 100"))
    assert len(ds.get_fragments()) == 20
    assert got.num_rows == 20_000 - 201
    assert any(m.startswith("lancenb.file") for m in seen)  # the trace did see the layers
    assert any(m.startswith("lancenb.expr") for m in seen)
    assert not up, up.most_common(5)


def test_append_delete_and_update_call_nothing_back_up(tmp_path):
    uri = str(tmp_path / "t")
    lancenb.write_dataset(_table(3_000), uri, max_rows_per_file=1_000)

    def writes():
        ds = lancenb.write_dataset(_table(500), uri, mode="append")
        ds.delete("a < 10")
        ds.update({"b": "b + 1"}, where="a < 100")
        return ds

    up, seen, ds = _traced(writes)
    assert any(m.startswith("lancenb.table") for m in seen)
    assert ds.count_rows() == 3_500 - 20
    assert not up, up.most_common(5)
