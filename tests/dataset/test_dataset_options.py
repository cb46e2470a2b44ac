"""Dataset-level options pylance's API takes (issue 32): ``update``'s commit retries,
``dataset(default_scan_options=, read_params=)``, sessions; each compared with pylance
on the same data."""

from __future__ import annotations

import datetime as dt

import lance
import pyarrow as pa
import pytest

import lancenb

T = pa.table({"a": range(10), "b": range(10)})


@pytest.mark.parametrize("kw", [
    dict(conflict_retries=5, retry_timeout=dt.timedelta(seconds=60)),
    dict(conflict_retries=0),
    dict(retry_timeout=dt.timedelta(milliseconds=1)),
])
def test_update_retry_parameters(tmp_path, kw):
    out = {}
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        lib.write_dataset(T, uri)
        ds = lib.dataset(uri)
        stats = ds.update({"b": "b + 1"}, where="a < 5", **kw)
        out[name] = (stats["num_rows_updated"], ds.version,
                     ds.to_table().sort_by("a"))
    assert out["n"] == out["p"]
    assert lance.dataset(str(tmp_path / "n")).to_table().sort_by("a") == out["p"][2]


def test_update_retries_on_stale_handle(tmp_path):
    """A stale handle's update with conflict_retries=0 still commits over an append
    (lancenb looks up the latest version before its first attempt), as pylance's."""
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        lib.write_dataset(T, uri)
        ds = lib.dataset(uri)
        lib.write_dataset(T, uri, mode="append")
        ds.update({"b": "0"}, where="a = 1", conflict_retries=0)
    assert lancenb.dataset(str(tmp_path / "n")).to_table().sort_by("a") == \
        lance.dataset(str(tmp_path / "p")).to_table().sort_by("a")


def test_update_refuses_negative_retries(tmp_path):
    ds = lancenb.write_dataset(T, str(tmp_path / "n"))
    with pytest.raises(lancenb.errors.InvalidInputError, match="conflict_retries"):
        ds.update({"b": "1"}, conflict_retries=-1)
    with pytest.raises(TypeError):
        ds.update({"b": "1"}, conflict_retriess=1)
