"""The latest-version hint (lancenb.table.hint): opening, appending and
``latest_version`` find the newest version from ``_versions/latest_version_hint.json``
plus a few existence checks, and fall back to listing ``_versions/`` whenever the hint
cannot be trusted. Every case here checks the answer against the listing and, where
pylance can open the dataset, against pylance."""

from __future__ import annotations

import json
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import LanceIOError
from lancenb.io.store import ObjectStore
from lancenb.table.commit import latest_version, list_versions, open_store
from lancenb.table.hint import PROBE_LIMIT, hint_bytes, parse_hint, probe_latest
from lancenb.table.manifest import manifest_name


def _t(a: int, n: int = 3) -> pa.Table:
    return pa.table({"id": np.arange(a, a + n, dtype=np.int64)})


def _make(path, versions: int, v2: bool = True) -> str:
    uri = str(path)
    lancenb.write_dataset(_t(0), uri, enable_v2_manifest_paths=v2)
    for k in range(1, versions):
        lancenb.write_dataset(_t(10 * k), uri, mode="append")
    return uri


def _set_hint(uri: str, body: bytes) -> None:
    with open(os.path.join(uri, "_versions", "latest_version_hint.json"), "wb") as f:
        f.write(body)


def _hint(uri: str) -> bytes:
    with open(os.path.join(uri, "_versions", "latest_version_hint.json"), "rb") as f:
        return f.read()


def _listed(uri: str) -> int:
    return list_versions(open_store(uri))[0][-1]


@pytest.mark.parametrize("raw, want", [
    (b'{"version":7}', 7), (b'{"version": 7, "other": [1]}', 7),
    (hint_bytes(2**64 - 2), 2**64 - 2),
    (b'{"version":0}', None), (b'{"version":-3}', None), (b'{"version":2.0}', None),
    (b'{"version":true}', None), (b'{"version":"7"}', None), (b'{"version":null}', None),
    (b'{"version":18446744073709551615}', None), (b"[7]", None), (b"7", None),
    (b"", None), (b"\xff\xfe", None), (b'{"version":7', None),
    (b'{"version":7,"pad":"' + b"x" * 300 + b'"}', None),  # longer than any hint
    (b"[" * 100_000, None),  # nesting past the json module's recursion limit
])
def test_parse_hint(raw, want):
    assert parse_hint(raw) == want


def test_hint_bytes_are_pylances(tmp_path):
    uri = str(tmp_path / "p")
    lance.write_dataset(_t(0), uri)
    lance.write_dataset(_t(5), uri, mode="append")
    assert _hint(uri) == hint_bytes(2)
    lancenb.write_dataset(_t(9), uri, mode="append")
    assert _hint(uri) == hint_bytes(3)


@pytest.mark.parametrize("v2", [True, False])
def test_current_hint_is_used_without_listing(tmp_path, listed_dirs, v2):
    uri = _make(tmp_path / "d", 6, v2)
    listed_dirs.clear()
    assert probe_latest(open_store(uri)) == (6, v2)
    ds = lancenb.dataset(uri)
    assert ds.version == 6 and ds.count_rows() == 18
    assert ds.latest_version == 6
    lancenb.write_dataset(_t(100), uri, mode="append")
    assert lancenb.dataset(uri).version == 7
    assert "_versions" not in listed_dirs, listed_dirs  # (only _refs/ was looked at)


@pytest.mark.parametrize("behind", [1, 5, PROBE_LIMIT])
def test_stale_hint_probes_up_to_the_latest(tmp_path, behind):
    n = PROBE_LIMIT + 3
    uri = _make(tmp_path / "d", n)
    _set_hint(uri, hint_bytes(n - behind))
    assert probe_latest(open_store(uri)) == (n, True)
    assert lancenb.dataset(uri).version == n == lance.dataset(uri).version


def test_hint_too_far_behind_falls_back_to_the_listing(tmp_path):
    n = PROBE_LIMIT + 3
    uri = _make(tmp_path / "d", n)
    _set_hint(uri, hint_bytes(n - PROBE_LIMIT - 1))
    assert probe_latest(open_store(uri)) is None
    assert latest_version(open_store(uri)) == (n, True)
    assert lancenb.dataset(uri).version == n


@pytest.mark.parametrize("body", [b"", b"junk", b'{"version":0}', hint_bytes(99),
                                  hint_bytes(2**64 - 2)])
def test_unusable_hint_falls_back_to_the_listing(tmp_path, body):
    uri = _make(tmp_path / "d", 4)
    _set_hint(uri, body)
    assert probe_latest(open_store(uri)) is None
    ds = lancenb.dataset(uri)
    assert ds.version == 4 == ds.latest_version == _listed(uri)
    lancenb.write_dataset(_t(50), uri, mode="append")  # the commit repairs the hint
    assert _hint(uri) == hint_bytes(5)
    assert lancenb.dataset(uri).version == 5 == lance.dataset(uri).version


def test_missing_hint_falls_back_to_the_listing(tmp_path):
    uri = _make(tmp_path / "d", 3)
    os.remove(os.path.join(uri, "_versions", "latest_version_hint.json"))
    assert probe_latest(open_store(uri)) is None
    assert lancenb.dataset(uri).version == 3


def test_tags_turn_the_probe_off(tmp_path):
    """Cleanup keeps a tagged version and removes the ones after it: a stale hint
    naming the tagged version must not end the search there."""
    uri = _make(tmp_path / "d", 5)
    ds = lancenb.dataset(uri)
    ds.tags.create("keep", 2)
    for v in (3, 4):  # what cleanup leaves: 1?, 2 (tagged), 5 (latest)
        os.remove(os.path.join(uri, "_versions", manifest_name(v, True)))
    _set_hint(uri, hint_bytes(2))
    assert probe_latest(open_store(uri)) is None
    assert lancenb.dataset(uri).version == 5 == lancenb.dataset(uri).latest_version
    lancenb.write_dataset(_t(70), uri, mode="append")
    assert lancenb.dataset(uri).version == 6 == lance.dataset(uri).version


def test_both_namings_are_left_to_the_listing(tmp_path):
    uri = _make(tmp_path / "d", 3, v2=True)
    d = os.path.join(uri, "_versions")
    # a V1-named copy of a version after the latest: the listing refuses the mix
    with open(os.path.join(d, manifest_name(3, True)), "rb") as f:
        raw = f.read()
    with open(os.path.join(d, manifest_name(4, False)), "wb") as f:
        f.write(raw)
    assert probe_latest(open_store(uri)) is None


def test_io_error_is_not_absence(tmp_path, monkeypatch):
    uri = _make(tmp_path / "d", 3)
    real = ObjectStore.has

    def flaky(self, rel):
        if rel.endswith(manifest_name(4, True)):
            raise LanceIOError("injected: cannot tell")
        return real(self, rel)

    monkeypatch.setattr(ObjectStore, "has", flaky)
    assert probe_latest(open_store(uri)) is None
    assert latest_version(open_store(uri)) == (3, True)


def test_has_is_strict(tmp_path):
    store = open_store(str(tmp_path))
    (tmp_path / "f").write_bytes(b"x")
    (tmp_path / "dir").mkdir()
    assert store.has("f") and not store.has("nope") and not store.has("f/under")
    assert not store.has("dir")  # a directory is not an object


def test_pylance_and_lancenb_interleaved(tmp_path):
    """Each library's commit writes the hint; each finds the other's latest."""
    uri = str(tmp_path / "d")
    lance.write_dataset(_t(0), uri)
    for k in range(1, 7):
        lib = lancenb if k % 2 else lance
        lib.write_dataset(_t(10 * k), uri, mode="append")
        assert lancenb.dataset(uri).version == k + 1 == lance.dataset(uri).version
    got = lancenb.dataset(uri).to_table().column("id").to_pylist()
    assert sorted(got) == sorted(lance.dataset(uri).to_table().column("id").to_pylist())


def test_checkout_latest_after_another_writer(tmp_path):
    uri = _make(tmp_path / "d", 2)
    ds = lancenb.dataset(uri)
    lance.write_dataset(_t(40), uri, mode="append")
    lancenb.write_dataset(_t(80), uri, mode="append")
    ds.checkout_latest()
    assert ds.version == 4 and ds.count_rows() == 12
    assert json.loads(_hint(uri)) == {"version": 4}
