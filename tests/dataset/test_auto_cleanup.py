"""Automatic cleanup as pylance's (``auto_cleanup_options``, ``lance.auto_cleanup.*``).

The config a created dataset gets, what ``enable_auto_cleanup``/``disable_auto_cleanup``
commit, and which versions survive commits, all compared with pylance on the same
histories; a dataset configured by one library is cleaned up by the other's commits.
``older_than_seconds=0`` makes every version but the last two removable at once, so
the tests need no sleeps.
"""

from __future__ import annotations

import datetime as dt
import logging

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.write.cleanup import format_duration, parse_duration

T = pa.table({"a": range(10), "b": range(10)})


def _versions(uri) -> list[int]:
    return [v["version"] for v in lance.dataset(uri).versions()]


@pytest.mark.parametrize("opts", [
    {"interval": 3, "older_than_seconds": 90061},
    {"interval": 2, "older_than_seconds": 3456000},
    {"interval": 1, "older_than_seconds": 63115205},
    {"interval": 5, "older_than_seconds": 0},
    {"interval": 3},
    {},
])
def test_create_config_like_pylance(tmp_path, opts):
    ours = lancenb.write_dataset(T, str(tmp_path / "n"), auto_cleanup_options=opts)
    ref = lance.write_dataset(T, str(tmp_path / "p"), auto_cleanup_options=opts)
    assert ours.config() == ref.config()
    assert lance.dataset(str(tmp_path / "n")).config() == ref.config()


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_append_or_overwrite_creating_stores_them(tmp_path, mode):
    opts = {"interval": 2, "older_than_seconds": 5}
    ours = lancenb.write_dataset(T, str(tmp_path / "n"), mode=mode, auto_cleanup_options=opts)
    ref = lance.write_dataset(T, str(tmp_path / "p"), mode=mode, auto_cleanup_options=opts)
    assert ours.config() == ref.config() == {"lance.auto_cleanup.interval": "2",
                                             "lance.auto_cleanup.older_than": "5s"}


@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_options_ignored_on_existing_dataset(tmp_path, mode):
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        lib.write_dataset(T, uri)
        lib.write_dataset(T, uri, mode=mode,
                          auto_cleanup_options={"interval": 1, "older_than_seconds": 0})
    assert lancenb.dataset(str(tmp_path / "n")).config() == {}
    assert lance.dataset(str(tmp_path / "p")).config() == {}
    assert _versions(str(tmp_path / "n")) == _versions(str(tmp_path / "p")) == [1, 2]


@pytest.mark.parametrize("interval", [1, 3])
def test_versions_kept_like_pylance(tmp_path, interval):
    """After each append, the same versions remain with either library."""
    opts = {"interval": interval, "older_than_seconds": 0}
    seen = {}
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        lib.write_dataset(T, uri, auto_cleanup_options=opts)
        seen[name] = []
        for _ in range(7):
            lib.write_dataset(T, uri, mode="append")
            seen[name].append(_versions(uri))
    assert seen["n"] == seen["p"]
    assert seen["n"][-1] == ([7, 8] if interval == 1 else [5, 6, 7, 8])
    assert lancenb.dataset(str(tmp_path / "n")).count_rows() == 80


@pytest.mark.parametrize("creator,appender", [(lance, lancenb), (lancenb, lance)])
def test_configured_by_one_cleaned_by_other(tmp_path, creator, appender):
    uri = str(tmp_path / "ds")
    creator.write_dataset(T, uri, auto_cleanup_options={"interval": 2,
                                                         "older_than_seconds": 0})
    for _ in range(3):
        appender.write_dataset(T, uri, mode="append")
    assert _versions(uri) == [3, 4]
    assert lancenb.dataset(uri).to_table() == lance.dataset(uri).to_table()


def test_enable_disable_like_pylance(tmp_path):
    hist = {}
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(T, uri)
        ds.optimize.enable_auto_cleanup({"interval": 1, "older_than_seconds": 0})
        cfg = lib.dataset(uri).config()
        for _ in range(3):
            lib.write_dataset(T, uri, mode="append")
        after_on = _versions(uri)
        lib.dataset(uri).optimize.disable_auto_cleanup()
        for _ in range(3):
            lib.write_dataset(T, uri, mode="append")
        hist[name] = (cfg, after_on, _versions(uri), lib.dataset(uri).config())
    assert hist["n"] == hist["p"]
    assert hist["n"][1] == [4, 5] and hist["n"][2] == [4, 5, 6, 7, 8, 9]


def test_every_commit_path_runs_it(tmp_path):
    """Deletes, config updates and LanceDataset.commit clean up too (every commit)."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(T, uri, auto_cleanup_options={"interval": 1,
                                                         "older_than_seconds": 0})
    ds = lancenb.dataset(uri)
    ds.delete("a = 1")
    assert _versions(uri) == [1, 2]
    ds.update_config({"k": "v"})
    assert _versions(uri) == [2, 3]
    frag = lancenb.LanceFragment.create(uri, T)
    lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append([frag]),
                                read_version=3)
    assert _versions(uri) == [3, 4]
    assert lance.dataset(uri).count_rows() == 19


def test_retain_versions_and_older_than_keys(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(T, uri)
    ds.update_config({"lance.auto_cleanup.interval": "1",
                      "lance.auto_cleanup.older_than": "0s",
                      "lance.auto_cleanup.retain_versions": "4"})
    for _ in range(4):
        lancenb.write_dataset(T, uri, mode="append")
    assert _versions(uri) == [3, 4, 5, 6]
    ds = lancenb.dataset(uri)
    ds.update_config({"lance.auto_cleanup.older_than": "2h 30m",
                      "lance.auto_cleanup.retain_versions": None})
    lancenb.write_dataset(T, uri, mode="append")
    assert _versions(uri) == [3, 4, 5, 6, 7, 8]  # all younger than 2.5 hours


def test_bad_config_never_fails_the_write(tmp_path, caplog):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(T, uri)
    ds.update_config({"lance.auto_cleanup.interval": "1",
                      "lance.auto_cleanup.older_than": "soon"})
    with caplog.at_level(logging.ERROR, logger="lancenb.cleanup"):
        lancenb.write_dataset(T, uri, mode="append")
    assert _versions(uri) == [1, 2, 3]
    assert "automatic cleanup after version 3 failed" in caplog.text
    # pylance too commits, and keeps every version
    lance.write_dataset(T, uri, mode="append")
    assert _versions(uri) == [1, 2, 3, 4]


@pytest.mark.parametrize("text,seconds", [
    ("1s", 1), ("1ms", 0.001), ("2h 30m", 9000), ("2h30m", 9000), ("14days", 14 * 86400),
    ("1day 1h 1m 1s", 90061), ("1week", 604800), ("1M", 2630016), ("1y", 31557600),
    ("5min 3sec", 303), ("7us", 7e-6), ("0s", 0),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == dt.timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "1", "s", "1 parsec", "-1s", "1.5s"])
def test_parse_duration_refuses(text):
    with pytest.raises(lancenb.errors.InvalidInputError):
        parse_duration(text)


@pytest.mark.parametrize("n", [0, 1, 59, 61, 3600, 90061, 86400 * 30, 3456000, 63115205])
def test_format_parse_round_trip(n):
    assert parse_duration(format_duration(n)) == dt.timedelta(seconds=n)


def test_stale_handle_changes_config_after_cleanup_like_pylance(tmp_path):
    """A handle opened before automatic cleanup removed the versions after it still
    commits a config change (disable_auto_cleanup), as pylance's does."""
    got = {}
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(T, uri)
        ds.optimize.enable_auto_cleanup({"interval": 1, "older_than_seconds": 0})
        for _ in range(3):
            lib.write_dataset(T, uri, mode="append")
        assert _versions(uri) == [4, 5]
        ds.optimize.disable_auto_cleanup()  # (ds is at version 2, removed)
        ds.update_config({"k": "v"})
        got[name] = (_versions(uri), lance.dataset(uri).config())
    assert got["n"] == got["p"]
    assert got["n"] == ([4, 5, 6, 7], {"k": "v"})
