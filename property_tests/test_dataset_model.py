"""Dataset histories under hypothesis, checked against a plain in-memory model.

A state machine drives a real dataset through random appends, deletes, overwrites,
added and dropped columns, compactions, restores, tags and cleanups of old versions
(half of the steps through pylance, so mixed histories are covered), with the
latest-version hint now and then set back to an older version (a slow writer's hint
landing late), and after every step checks that lancenb and pylance both read exactly
what the model says, at the latest version and at a random older one that still
exists, and that a handle opened earlier moves to the latest version. Appends and
deletes through such a stale handle are rebased over what was committed since or
refused as conflicts, with nothing committed.
"""

from __future__ import annotations

import datetime
import os
import shutil
import tempfile

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _tables import assert_tables_equal
from budget import EXAMPLES, fuzz_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import lancenb
from lancenb.errors import CommitConflictError, LanceError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _rows(start: int, n: int, extra: list[str]) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    cols = {"id": ids, "v": pa.array((ids * 7 % 11).astype(np.int32), mask=ids % 5 == 0),
            "s": pa.array([f"s{i % 4}" for i in ids], pa.string())}
    t = pa.table(cols)
    for name in extra:  # columns added later hold nulls for new rows written as nulls
        t = t.append_column(pa.field(name, pa.int64()), pa.nulls(n, pa.int64()))
    return t


class DatasetHistory(RuleBasedStateMachine):
    """The model is one pa.Table per version (version k at index k - 1)."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="lancenb-model-")
        self.uri = f"{self.dir}/ds"
        self.versions: list[pa.Table] = []
        self.next_id = 0
        self.extra: list[str] = []
        self.gone: set[int] = set()  # versions cleanup removed
        self.tags: dict[str, int] = {}
        self.handle = None  # a dataset opened some steps ago
        self.mover = None

    def _alive(self) -> list[int]:
        return [v for v in range(1, len(self.versions) + 1) if v not in self.gone]

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def current(self) -> pa.Table:
        return self.versions[-1]

    def _lib(self, use_pylance: bool):
        return lance if use_pylance else lancenb

    @initialize(n=st.integers(0, 30), fmt=st.sampled_from(["2.1", "2.2"]))
    def create(self, n, fmt):
        t = _rows(0, n, [])
        self.next_id = n
        lancenb.write_dataset(t, self.uri, data_storage_version=fmt, max_rows_per_file=10,
                              schema=t.schema)
        self.versions.append(t)

    @rule(n=st.integers(1, 25), use_pylance=st.booleans())
    def append(self, n, use_pylance):
        t = _rows(self.next_id, n, self.extra)
        self.next_id += n
        self._lib(use_pylance).write_dataset(t, self.uri, mode="append", max_rows_per_file=10)
        self.versions.append(pa.concat_tables([self.current, t]))

    @rule(mod=st.integers(2, 6), rem=st.integers(0, 5), use_pylance=st.booleans())
    def delete(self, mod, rem, use_pylance):
        pred = f"id % {mod} = {rem % mod}"
        keep = pc.not_equal(np.fmod(np.asarray(self.current["id"]), mod), rem % mod)
        self._lib(use_pylance).dataset(self.uri).delete(pred)
        self.versions.append(self.current.filter(keep))  # a version even if nothing matched

    @rule(n=st.integers(0, 15), use_pylance=st.booleans())
    def overwrite(self, n, use_pylance):
        t = _rows(self.next_id, n, [])
        self.next_id += n
        self._lib(use_pylance).write_dataset(t, self.uri, mode="overwrite",
                                             max_rows_per_file=10)
        self.extra = []
        self.versions.append(t)

    @precondition(lambda self: len(self.extra) < 2)
    @rule(use_pylance=st.booleans())
    def add_column(self, use_pylance):
        name = f"e{len(self.versions)}"
        self._lib(use_pylance).dataset(self.uri).add_columns({name: "id * 2"})
        self.extra.append(name)
        self.versions.append(self.current.append_column(
            pa.field(name, pa.int64()), pc.multiply(self.current["id"], 2)))

    @precondition(lambda self: bool(self.extra))
    @rule(use_pylance=st.booleans())
    def drop_column(self, use_pylance):
        name = self.extra.pop()
        self._lib(use_pylance).dataset(self.uri).drop_columns([name])
        self.versions.append(self.current.drop_columns([name]))

    @precondition(lambda self: len(self.versions) > 1)
    @rule(data=st.data())
    def restore(self, data):
        v = data.draw(st.sampled_from(self._alive()))
        lancenb.dataset(self.uri, version=v).restore()
        t = self.versions[v - 1]
        self.extra = [c for c in t.column_names if c.startswith("e")]
        self.versions.append(t)

    @rule(use_pylance=st.booleans())
    def compact(self, use_pylance):
        before = lancenb.dataset(self.uri).version
        self._lib(use_pylance).dataset(self.uri).optimize.compact_files(
            target_rows_per_fragment=40)
        # pylance commits two versions (reserve fragment ids, then rewrite); same rows
        for _ in range(lancenb.dataset(self.uri).version - before):
            self.versions.append(self.current)

    @precondition(lambda self: len(self.tags) < 3 and len(self.versions) > 0)
    @rule(data=st.data(), use_pylance=st.booleans())
    def tag(self, data, use_pylance):
        v = data.draw(st.sampled_from(self._alive()))
        name = f"t{len(self.versions)}x{len(self.tags)}"
        self._lib(use_pylance).dataset(self.uri).tags.create(name, v)
        self.tags[name] = v

    @precondition(lambda self: len(self.versions) > 1)
    @rule(use_pylance=st.booleans())
    def cleanup(self, use_pylance):
        """Every version but the latest and the tagged ones goes."""
        self._lib(use_pylance).dataset(self.uri).cleanup_old_versions(
            older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
        keep = set(self.tags.values()) | {len(self.versions)}
        self.gone |= set(range(1, len(self.versions) + 1)) - keep

    @precondition(lambda self: len(self.versions) > 1)
    @rule(data=st.data())
    def stale_hint(self, data):
        v = data.draw(st.sampled_from(self._alive()))
        with open(os.path.join(self.uri, "_versions", "latest_version_hint.json"), "wb") as f:
            f.write(b'{"version":%d}' % v)

    @rule()
    def open_handle(self):
        self.handle = lancenb.dataset(self.uri)  # for stale writes
        self.mover = lancenb.dataset(self.uri)  # moved to the latest after every step

    def _stale(self, write):
        """Run ``write`` through the handle opened earlier (its version ``r``): it is
        rebased over what was committed since, or refused as a conflict (nothing
        committed); once cleanup removed ``r``, reading its files may fail too."""
        r = self.handle.version
        try:
            write()
        except CommitConflictError:
            return False
        except LanceError:
            if r in self.gone:
                return False
            raise
        return True

    @precondition(lambda self: self.handle is not None)
    @rule(n=st.integers(1, 8))
    def stale_append(self, n):
        seen = self.versions[self.handle.version - 1]
        t = _rows(self.next_id, n, [c for c in seen.column_names if c.startswith("e")])
        self.next_id += n
        if self._stale(lambda: lancenb.write_dataset(t, self.handle, mode="append",
                                                     max_rows_per_file=10)):
            assert t.column_names == self.current.column_names
            self.versions.append(pa.concat_tables([self.current, t]))

    @precondition(lambda self: self.handle is not None)
    @rule(mod=st.integers(2, 6), rem=st.integers(0, 5))
    def stale_delete(self, mod, rem):
        """Only the rows the handle's version held can be deleted: rows appended
        since are not (the predicate was evaluated on what the handle read)."""
        seen = self.versions[self.handle.version - 1]["id"]
        hit = pc.filter(seen, pc.equal(np.fmod(np.asarray(seen), mod), rem % mod))
        if self._stale(lambda: self.handle.delete(f"id % {mod} = {rem % mod}")):
            gone = pc.is_in(self.current["id"], value_set=hit)
            self.versions.append(self.current.filter(pc.invert(gone)))

    @invariant()
    def both_read_the_model(self):
        if not self.versions:
            return
        want = self.current
        ours = lancenb.dataset(self.uri)
        assert ours.version == len(self.versions)
        assert_tables_equal(ours.to_table(), want)
        assert_tables_equal(lance.dataset(self.uri).to_table(), want)
        assert ours.count_rows() == want.num_rows
        if want.num_rows:
            idx = [0, want.num_rows - 1, want.num_rows // 2]
            assert_tables_equal(ours.take(idx), want.take(pa.array(idx)))
        assert ours.latest_version == len(self.versions)
        alive = self._alive()
        old = alive[(len(self.versions) * 7919) % len(alive)]
        assert_tables_equal(lancenb.dataset(self.uri, version=old).to_table(),
                            self.versions[old - 1])
        if self.mover is not None:
            self.mover.checkout_latest()
            assert self.mover.version == len(self.versions)
            assert self.mover.count_rows() == want.num_rows


TestDatasetHistory = DatasetHistory.TestCase
TestDatasetHistory.settings = fuzz_settings(examples=max(5, EXAMPLES // 3),
                                            stateful_step_count=12)
