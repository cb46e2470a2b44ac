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


# -- default_scan_options, read_params ----------------------------------------------------

@pytest.mark.parametrize("opts", [
    {"with_row_id": True}, {"with_row_address": True}, {"columns": ["b"]},
    {"filter": "a > 4", "with_row_id": True}, {"limit": 3}, {"batch_size": 4},
])
def test_default_scan_options_like_pylance(tmp_path, opts):
    uri = str(tmp_path / "ds")
    lance.write_dataset(T, uri, max_rows_per_file=6)
    ours = lancenb.dataset(uri, default_scan_options=opts)
    ref = lance.dataset(uri, default_scan_options=opts)
    assert ours.schema == ref.schema
    assert ours.to_table() == ref.to_table()
    assert ours.scanner().to_table() == ref.scanner().to_table()
    # what a call passes wins
    assert ours.scanner(columns=["a"], with_row_id=False).to_table() == \
        ref.scanner(columns=["a"], with_row_id=False).to_table()
    assert [b.num_rows for b in ours.to_batches()] == [b.num_rows for b in ref.to_batches()]


def test_default_scan_options_unknown_key(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(T, uri)
    for lib in (lancenb, lance):
        ds = lib.dataset(uri, default_scan_options={"no_such_option": 1})
        with pytest.raises(ValueError, match="Unknown option no_such_option"):
            ds.scanner()


def test_read_params_accepted(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(T, uri)
    for p in ({"cache_repetition_index": True, "validate_on_decode": True},
              {"cache_repetition_index": False}, {"validate_on_decode": False}):
        assert lancenb.dataset(uri, read_params=p).to_table() == T
    with pytest.raises(lancenb.errors.InvalidInputError, match="read_params"):
        lancenb.dataset(uri, read_params={"cache_everything": True})


# -- sessions ------------------------------------------------------------------------

def test_session_grows_with_scans_and_is_shared(tmp_path):
    uri = str(tmp_path / "ds")
    ds1 = lance.write_dataset(pa.table({"a": range(1000)}), uri, max_rows_per_file=250)
    ours = lancenb.dataset(uri)
    before = ours.session().size_bytes()
    assert before > 0  # (the manifest)
    assert ours.to_table() == ds1.to_table()
    after = ours.session().size_bytes()
    assert after > before
    other = lancenb.dataset(uri, session=ours.session())
    assert other.session().is_same_as(ours.session())
    assert not lancenb.dataset(uri).session().is_same_as(ours.session())
    assert other.session().size_bytes() == after  # its files were already open
    assert other.to_table() == ours.to_table()
    assert ours.session().size_bytes() == after
    s = lancenb.Session()
    a = lancenb.dataset(uri, session=s)
    a.to_table()
    assert s.size_bytes() == after and s.approx_num_items() == 5


def test_session_survives_commits(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(T, uri)
    s = ds.session()
    ds.delete("a = 1")
    ds.update_config({"k": "v"})
    assert ds.session().is_same_as(s)
    assert lance.dataset(uri).to_table() == ds.to_table()


def test_metadata_cache_size_bytes_zero(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), uri)
    full = lancenb.dataset(uri)
    full.to_table()
    none = lancenb.dataset(uri, metadata_cache_size_bytes=0)
    assert none.to_table() == full.to_table()
    assert none.session().size_bytes() == 0 < full.session().size_bytes()
    small = lancenb.Session(metadata_cache_size_bytes=1500)
    ds = lancenb.dataset(uri, session=small)
    ds.to_table()
    assert small.size_bytes() <= 1500
    with pytest.raises(lancenb.errors.InvalidInputError):
        lancenb.Session(metadata_cache_size_bytes=-1)


def test_checkout_shares_the_session(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(T, uri)
    lancenb.write_dataset(T, uri, mode="append")
    old = ds.checkout_version(1)
    assert old.session().is_same_as(ds.session())
    assert old.to_table() == lance.dataset(uri, version=1).to_table()
