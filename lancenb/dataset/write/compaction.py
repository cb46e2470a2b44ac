"""Compaction: small fragments (and fragments with many deleted rows) rewritten into
fewer, larger ones, in one call or distributed over workers, as pylance's.

A compaction is planned, executed and committed:

* :meth:`Compaction.plan` groups runs of consecutive fragments worth rewriting
  together (groups of at least ``target_rows_per_fragment`` live rows, by pylance's
  rules: :func:`_plan_bins`) into :class:`CompactionTask` s, each naming the
  fragments as the plan saw them (their deletions included);
* :meth:`CompactionTask.execute` rewrites one group's live rows into new data files
  (streamed in batches of ``batch_size`` rows, so memory stays bounded) and returns a
  :class:`RewriteResult` without committing; tasks, plans and results pickle, so the
  tasks can run in other processes or machines;
* :meth:`Compaction.commit` commits the results in two versions, as pylance does: a
  ``ReserveFragments`` transaction takes ids for the new fragments, then a ``Rewrite``
  transaction replaces each group's old fragments with the new ones, in place. A
  concurrent writer that commits between them takes later ids, so the new fragments'
  ids never collide with its fragments'.

With stable row ids the moved rows keep their ids: the new fragments carry the old ids
as explicit sequences, and the commit moves every index's fragment bitmap to them.
Without them the indices covering rewritten fragments are remapped at commit, as
pylance's (:mod:`lancenb.index.remap`: written again under new uuids, listed as the
``Rewrite``'s rewritten indices); as pylance's, a group never mixes fragments covered by
different sets of indices. ``compact_files`` (``ds.optimize.compact_files``) does all
three.

Example: ten fragments of 100 rows with ``target_rows_per_fragment=1000`` are one task;
its result replaces them with one fragment, and the dataset gains two versions.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass, field

import numpy as np

from lancenb._proto import transaction_pb2
from lancenb.dataset.fragment import LanceFragment
from lancenb.dataset.write.insert import cleanup, write_data_files
from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file.version import FileVersion
from lancenb.index import remap
from lancenb.table.fragments import FragmentMetadata, as_pb
from lancenb.table.indices import index_from_pb, parse_section
from lancenb.table.rowids import encode_array_row_ids, encode_version_array, set_row_ids
from lancenb.table.transaction import Op, Transaction

__all__ = ["Compaction", "CompactionPlan", "CompactionTask", "RewriteResult",
           "CompactionMetrics", "compact_files", "compaction_rows"]

# pylance's CompactionOptions: these are honoured; the others are accepted (they tune
# pylance's Rust reader and writer; defer_index_remap: lancenb remaps at once)
_DEFAULTS = {"target_rows_per_fragment": 1024 * 1024, "max_rows_per_group": 1024,
             "max_bytes_per_file": None, "materialize_deletions": True,
             "materialize_deletions_threshold": 0.1, "num_threads": None,
             "batch_size": 64 * 1024}
_ACCEPTED = {"io_buffer_size", "defer_index_remap", "compaction_mode",
             "binary_copy_read_batch_bytes"}


@dataclass
class CompactionMetrics:
    """What a compaction did: fragments and files removed and added."""
    fragments_removed: int = 0
    fragments_added: int = 0
    files_removed: int = 0
    files_added: int = 0


def _options(options: dict | None) -> dict:
    opts = dict(_DEFAULTS)
    for k, v in (options or {}).items():
        if k in _DEFAULTS:
            if v is not None:
                opts[k] = v
        elif k not in _ACCEPTED:
            raise InvalidInputError(f"unknown compaction option {k!r}; the options are "
                                    f"{sorted(set(_DEFAULTS) | _ACCEPTED)}")
    if opts["target_rows_per_fragment"] <= 0 or opts["batch_size"] <= 0:
        raise InvalidInputError("target_rows_per_fragment and batch_size must be positive")
    return opts


@dataclass
class RewriteResult:
    """One task's new fragments (not committed), the fragments they replace and what
    it did; pass it to :meth:`Compaction.commit`."""
    read_version: int
    new_fragments: list
    old_fragments: list
    metrics: CompactionMetrics
    #: every file the task wrote (removed if the commit fails before its commit point)
    written: list = field(default_factory=list, repr=False, compare=False)

    def __repr__(self) -> str:
        return (f"RewriteResult(read_version={self.read_version}, "
                f"new_fragments={self.new_fragments}, old_fragments={self.old_fragments})")


@dataclass
class CompactionTask:
    """Fragments to rewrite together, as the plan at ``read_version`` saw them."""
    read_version: int
    fragments: list
    options: dict = field(default_factory=dict, repr=False)

    def execute(self, dataset) -> RewriteResult:
        """Rewrite this task's fragments' live rows into new data files of
        ``dataset`` (not committed)."""
        return _rewrite(dataset, self)


@dataclass
class CompactionPlan:
    """The tasks of a compaction planned at ``read_version``."""
    read_version: int
    tasks: list

    def num_tasks(self) -> int:
        return len(self.tasks)

    def __repr__(self) -> str:
        return f"CompactionPlan(read_version={self.read_version}, " \
               f"tasks=<{len(self.tasks)} compaction tasks>)"


class Compaction:
    """pylance's ``lance.lance.Compaction``: plan, execute (anywhere), commit."""

    @staticmethod
    def plan(dataset, options: dict | None = None) -> CompactionPlan:
        """The tasks compacting ``dataset`` with ``options`` (pylance's
        ``CompactionOptions``) would run."""
        opts = _options(options)
        bins = _plan_bins(dataset.get_fragments(), opts["target_rows_per_fragment"],
                          opts["materialize_deletions"],
                          opts["materialize_deletions_threshold"], _index_sets(dataset))
        _check_indices(dataset, bins)
        tasks = [CompactionTask(dataset.version, [f.metadata for f in group], opts)
                 for group in bins]
        return CompactionPlan(dataset.version, tasks)

    @staticmethod
    def execute(dataset, options: dict | None = None) -> CompactionMetrics:
        """Plan, execute every task here and commit."""
        return compact_files(dataset, **(options or {}))

    @staticmethod
    def commit(dataset, rewrites: list) -> CompactionMetrics:
        """Commit ``rewrites`` (:class:`RewriteResult` s of one plan) as two versions:
        fragment ids reserved, then the rewrite."""
        return _commit(dataset, list(rewrites))


def compaction_rows(ds, *, target_rows_per_fragment: int = 1024 * 1024,
                    materialize_deletions: bool = True,
                    materialize_deletions_threshold: float = 0.1) -> int:
    """Rows :func:`compact_files` with these options would rewrite (for a progress
    total)."""
    bins = _plan_bins(ds.get_fragments(), target_rows_per_fragment, materialize_deletions,
                      materialize_deletions_threshold, _index_sets(ds))
    return sum(f.count_rows() for group in bins for f in group)


def compact_files(ds, *, progress=None, **options) -> CompactionMetrics:
    """Merge small fragments and drop deleted rows; returns what changed.

    ``options`` are pylance's ``CompactionOptions``. ``progress``: called with the
    number of rows each group of fragments rewrote (the CLI's ``lancenb compact``
    draws a bar with it; the total is :func:`compaction_rows`)."""
    plan = Compaction.plan(ds, options)
    results: list[RewriteResult] = []
    try:
        for task in plan.tasks:
            results.append(task.execute(ds))
            if progress is not None:
                progress(sum(f.num_rows for f in results[-1].new_fragments))
    except BaseException:
        cleanup(ds.snapshot.store, [p for r in results for p in r.written])
        raise
    return _commit(ds, results)


def _index_sets(ds):
    """fragment id -> the indices (positions in ``list_indices()``) covering it."""
    if not ds.manifest.HasField("index_section"):
        return None
    out: dict = {}
    for k, e in enumerate(ds.list_indices()):
        for f in e["fragment_ids"]:
            out.setdefault(int(f), set()).add(k)
    return {f: frozenset(v) for f, v in out.items()}


def _check_indices(ds, bins) -> None:
    """Refuse (before writing anything) to rewrite fragments an index lancenb cannot
    remap covers."""
    if ds.stable_row_ids or not bins:
        return
    bad = remap.unremappable(ds, {f.fragment_id for group in bins for f in group})
    if bad:
        raise NotSupportedError(f"compaction: lancenb cannot remap the {bad[0]['type']} "
                                f"index {bad[0]['name']!r} covering the fragments to rewrite")


def _plan_bins(frags, target: int, materialize: bool, threshold: float, index_sets=None):
    """The groups of fragments to rewrite, by pylance's rules.

    A fragment is a candidate to rewrite on its own when more than ``threshold`` of
    its rows are deleted (and deletions are materialised), or together with
    neighbours when it holds fewer than ``target`` rows. Runs of consecutive
    candidates covered by the same indices (``index_sets``: fragment id -> a set of
    indices) form bins; a bin of one fragment that is only a candidate with
    neighbours is dropped (nothing to gain); a bin is cut into groups of at least
    ``target`` live rows each, the last group taking whatever would not make another
    such group."""
    runs, cur, key = [], [], None
    for f in frags:
        itself = _dirty(f, materialize, threshold)
        if itself or f.physical_rows < target:
            k = index_sets.get(f.fragment_id, frozenset()) if index_sets else None
            if cur and k != key:
                runs.append(cur)
                cur = []
            key = k
            cur.append((f, itself))
        elif cur:
            runs.append(cur)
            cur = []
    if cur:
        runs.append(cur)
    bins = []
    for run in runs:
        if len(run) == 1 and not run[0][1]:
            continue
        rows = [f.count_rows() for f, _ in run]
        start = 0
        while True:
            end, got = start, 0
            while got < target and end < len(run):
                got += rows[end]
                end += 1
            if sum(rows[end:]) >= target:
                bins.append([f for f, _ in run[start:end]])
                start = end
            else:
                bins.append([f for f, _ in run[start:]])
                break
    return bins


def _dirty(f, materialize: bool, threshold: float) -> bool:
    if not materialize or not f.physical_rows:
        return False
    return len(f.deleted_offsets()) / f.physical_rows > threshold


def _rewrite(ds, task: CompactionTask) -> RewriteResult:
    opts = _options(task.options)
    batch_size = opts["batch_size"]
    # the fragments as the plan saw them (their deletions then), read through ``ds``
    group = [LanceFragment(ds, as_pb(m)) for m in task.fragments]
    schema = ds.snapshot.schema
    stable = ds.stable_row_ids
    ids_parts, created_parts, updated_parts = [], [], []

    def batches():
        for frag in group:
            live = frag.live_offsets()
            offs = np.arange(frag.physical_rows, dtype=np.int64) if live is None else live
            if stable:
                ids_parts.append(frag.row_ids()[offs])
                created_parts.append(frag.row_versions("created")[offs])
                updated_parts.append(frag.row_versions("last_updated")[offs])
            for lo in range(0, len(offs), batch_size):
                yield from frag.take_physical(schema.names, offs[lo:lo + batch_size]).to_batches()

    written: list[str] = []
    kw = {} if opts["max_bytes_per_file"] is None else \
        {"max_bytes_per_file": opts["max_bytes_per_file"]}
    try:
        new = write_data_files(ds.snapshot.store, batches(), schema, list(ds.manifest.fields),
                               version=FileVersion.resolve(ds.data_storage_version),
                               max_rows_per_file=opts["target_rows_per_fragment"],
                               written=written, **kw)
        if stable:
            ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, np.uint64)
            created = np.concatenate(created_parts) if created_parts else ids
            updated = np.concatenate(updated_parts) if updated_parts else ids
            pos = 0
            for f in new:
                n = f.physical_rows
                set_row_ids(f, encode_array_row_ids(ids[pos:pos + n]), ds.snapshot.store, written)
                f.inline_created_at_versions = encode_version_array(created[pos:pos + n])
                f.inline_last_updated_at_versions = encode_version_array(updated[pos:pos + n])
                pos += n
    except BaseException:
        cleanup(ds.snapshot.store, written)
        raise
    # (pylance counts a fragment's deletion file among its files)
    metrics = CompactionMetrics(
        fragments_removed=len(group), fragments_added=len(new),
        files_removed=sum(len(m.files) + (m.deletion_file is not None) for m in task.fragments),
        files_added=sum(len(f.files) for f in new))
    return RewriteResult(task.read_version, [FragmentMetadata.from_pb(f) for f in new],
                         list(task.fragments), metrics, written)


def _commit(ds, results: list) -> CompactionMetrics:
    metrics = CompactionMetrics()
    written = [p for r in results for p in r.written]
    new_count = sum(len(r.new_fragments) for r in results)
    if not results or not new_count and not any(r.old_fragments for r in results):
        return metrics
    read_version = min(r.read_version for r in results)
    try:
        reserve = transaction_pb2.Transaction.ReserveFragments(num_fragments=new_count)
        ds.snapshot.commit(Transaction(ds.version, Op.RESERVE_FRAGMENTS, reserve))
    except BaseException:
        cleanup(ds.snapshot.store, written)
        raise
    next_id = ds.manifest.max_fragment_id - new_count + 1
    op = transaction_pb2.Transaction.Rewrite()
    for r in results:
        g = op.groups.add()
        g.old_fragments.extend(as_pb(m) for m in r.old_fragments)
        for m in r.new_fragments:
            pb = as_pb(m)
            pb.id = next_id
            next_id += 1
            g.new_fragments.append(pb)
        for k in ("fragments_removed", "fragments_added", "files_removed", "files_added"):
            setattr(metrics, k, getattr(metrics, k) + getattr(r.metrics, k))
    remapped: list = []
    try:
        if ds.manifest.HasField("index_section"):
            remapped = _remap(ds, op)
        ds.snapshot.commit(Transaction(read_version, Op.REWRITE, op), written)
    except BaseException:
        remap.remove_written(ds, remapped)
        raise
    return metrics


def _remap(ds, op) -> list:
    """The indices covering the rewritten fragments written again for their rows'
    new addresses (:mod:`lancenb.index.remap`), listed in the ``Rewrite`` ``op``."""
    groups, moved, new_objs = [], {}, []
    for g in op.groups:
        old = [(m.id, LanceFragment(ds, m).live_offsets(), m.physical_rows)
               for m in g.old_fragments]
        groups.append((old, [(m.id, m.physical_rows) for m in g.new_fragments]))
        for m in g.old_fragments:
            moved[m.id] = [n.id for n in g.new_fragments]
        new_objs.extend(LanceFragment(ds, n) for n in g.new_fragments)
    stable = ds.stable_row_ids
    amap = None if stable else remap.AddressMap.from_groups(groups)
    section = ds.snapshot.manifest.index_section_bytes()
    versions = {index_from_pb(m).uuid: int(m.index_version)
                for m in parse_section(section, "index section")}
    done = remap.remap_indices(ds, amap, new_objs, moved, stable=stable, versions=versions)
    for r in done:
        ri = op.rewritten_indices.add()
        ri.old_id.uuid = uuidlib.UUID(r.old_uuid).bytes
        ri.new_id.uuid = uuidlib.UUID(r.new_uuid).bytes
        ri.new_index_details.type_url = r.details_type_url
        ri.new_index_details.value = r.details
        ri.new_index_version = r.index_version
        for name, size in r.files:
            ri.new_index_files.add(path=name, size_bytes=size)
    return done
