"""Transactions: what a commit changes, how it turns a manifest into the next one,
and which concurrent transactions it can be rebased over.

This is lancenb's one model of a transaction. Its kind is an :class:`Op` (the
name of the ``operation`` field set in the ``lance.table.Transaction`` protobuf);
a :class:`Transaction` wraps that protobuf (written to
``_transactions/{read_version}-{uuid}.txn`` and inline in the manifest,
:meth:`Transaction.to_pb` / :meth:`Transaction.from_pb`) plus what rebasing needs
but the protobuf does not carry (the rows a delete removed). Which fragments an
operation adds (:func:`new_fragments`) and which existing ones it changes or
removes (:func:`modified_fragment_ids`) are answered here once, for the conflict
rules, the commit's write counters and ``LanceDataset.commit``'s checks.
pylance's public ``LanceOperation`` classes (:mod:`lancenb.dataset.operations`)
are thin wrappers that convert to and from this model.

Which concurrent transactions a transaction can be committed over is decided in
:mod:`lancenb.table.conflicts` (pylance's rules); this module builds manifests.
"""

from __future__ import annotations

import time
import uuid as uuidlib
from enum import Enum

import numpy as np
from pyroaring import BitMap

from lancenb._proto import table_pb2, transaction_pb2
from lancenb.errors import CommitConflictError, CorruptFileError, InvalidInputError
from lancenb.table.indices import parse_section, section_bytes
from lancenb.table.manifest import FLAG_STABLE_ROW_IDS, feature_flags_for
from lancenb.table.rowids import encode_range_row_ids, encode_version_runs

__all__ = ["Op", "Transaction", "build_manifest", "next_indices", "index_section_for",
           "new_fragments", "modified_fragment_ids", "removed_fragment_ids"]

WRITER_LIBRARY = "lancenb"


class Op(str, Enum):
    """The kind of a transaction's operation: the name of the ``operation`` field set
    in its ``lance.table.Transaction`` protobuf (``Op.APPEND.value == "append"``)."""

    APPEND = "append"
    DELETE = "delete"
    OVERWRITE = "overwrite"
    CREATE_INDEX = "create_index"
    REWRITE = "rewrite"
    MERGE = "merge"
    RESTORE = "restore"
    RESERVE_FRAGMENTS = "reserve_fragments"
    UPDATE = "update"
    PROJECT = "project"
    UPDATE_CONFIG = "update_config"
    DATA_REPLACEMENT = "data_replacement"
    UPDATE_MEM_WAL_STATE = "update_mem_wal_state"
    CLONE = "clone"
    UPDATE_BASES = "update_bases"

    def __str__(self) -> str:  # (messages name the operation as the protobuf does)
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def of(cls, txn_pb) -> Op | None:
        """The kind of a transaction protobuf (None: no protobuf, or no operation set)."""
        name = txn_pb.WhichOneof("operation") if txn_pb is not None else None
        return cls(name) if name else None

    def message(self, txn_pb):
        """This operation's message inside the transaction protobuf ``txn_pb``."""
        return getattr(txn_pb, self.value)


#: operations whose message holds ``fragments``: all the fragments they add
_ADDS_FRAGMENTS = frozenset({Op.APPEND, Op.OVERWRITE, Op.MERGE})


def new_fragments(txn_pb) -> list:
    """The fragment protobufs an operation adds to the dataset (for a merge: all of
    its fragments, which replace the old ones); ids are assigned at commit."""
    op = Op.of(txn_pb)
    if op in _ADDS_FRAGMENTS:
        return list(op.message(txn_pb).fragments)
    if op is Op.UPDATE:
        return list(txn_pb.update.new_fragments)
    if op is Op.REWRITE:
        return [f for g in txn_pb.rewrite.groups for f in g.new_fragments]
    return []


def removed_fragment_ids(txn_pb) -> set[int]:
    """Ids of the existing fragments an operation removes whole."""
    op = Op.of(txn_pb)
    if op is Op.DELETE:
        return set(txn_pb.delete.deleted_fragment_ids)
    if op is Op.UPDATE:
        return set(txn_pb.update.removed_fragment_ids)
    return set()


def modified_fragment_ids(txn_pb) -> set[int]:
    """Ids of the existing fragments an operation changes or removes (not the ones it
    adds): what two concurrent transactions must not both touch."""
    op = Op.of(txn_pb)
    if op in (Op.DELETE, Op.UPDATE):
        return {f.id for f in op.message(txn_pb).updated_fragments} | \
            removed_fragment_ids(txn_pb)
    if op is Op.REWRITE:
        r = txn_pb.rewrite
        ids = {f.id for f in r.old_fragments}
        for g in r.groups:
            ids |= {f.id for f in g.old_fragments}
        return ids
    if op is Op.DATA_REPLACEMENT:
        return {g.fragment_id for g in txn_pb.data_replacement.replacements}
    return set()


class Transaction:
    """One operation on a dataset, as a ``lance.table.Transaction`` plus rebase state.

    ``op`` is its :class:`Op` (a plain string naming one is accepted too) and ``msg``
    that operation's protobuf message."""

    def __init__(self, read_version: int, op: Op | str, msg, *, tag: str = "",
                 properties: dict | None = None):
        self.pb = transaction_pb2.Transaction(read_version=read_version,
                                              uuid=str(uuidlib.uuid4()), tag=tag)
        for k, v in (properties or {}).items():
            self.pb.transaction_properties[k] = v
        self._op = Op(op)
        self._op.message(self.pb).CopyFrom(msg)
        # delete: fragment id -> the row offsets *this* delete removed (for rebasing)
        self.deleted_rows: dict[int, np.ndarray] = {}
        self.restore_manifest = None  # restore: the manifest being restored
        self.restore_index_section: bytes | None = None
        # clone: the source version's number, which the clone's first manifest keeps
        self.clone_version: int | None = None
        self.create_only = False  # mode="create": fail if any version exists
        self.enable_stable_row_ids: bool | None = None  # create/overwrite option
        self.needs_merge: set[int] = set()  # delete: fragments to merge deletion sets on
        # delete/update: the rows it removes from existing fragments are known (a delete
        # fills deleted_rows; an update's are its deletion files less the read version's),
        # so it can be rebased over a concurrent change of the same fragments' deletions
        # (False for operations given to LanceDataset.commit: pylance does not rebase those)
        self.rows_known = True

    @classmethod
    def from_pb(cls, txn_pb) -> Transaction:
        """The transaction of a ``lance.table.Transaction`` protobuf (a copy of it; its
        rows are not known, so it is not rebased as a delete/update of our own is)."""
        op = Op.of(txn_pb)
        if op is None:
            raise CorruptFileError("a transaction protobuf without an operation")
        txn = cls(txn_pb.read_version, op, op.message(txn_pb), tag=txn_pb.tag,
                  properties=dict(txn_pb.transaction_properties))
        txn.pb.uuid = txn_pb.uuid
        txn.rows_known = False
        return txn

    def to_pb(self):
        """The ``lance.table.Transaction`` protobuf (the one this object holds)."""
        return self.pb

    @property
    def op(self) -> Op:
        """The operation's kind: ``Op.APPEND``, ``Op.OVERWRITE``, ``Op.DELETE``, ..."""
        return self._op

    @property
    def message(self):
        """The operation's protobuf message (``pb.append``, ``pb.delete``, ...)."""
        return self._op.message(self.pb)

    @property
    def uuid(self) -> str:
        """The transaction's uuid (its file name and conflict identity)."""
        return self.pb.uuid

    @property
    def read_version(self) -> int:
        """The version the transaction was built against."""
        return int(self.pb.read_version)

    def file_name(self) -> str:
        """``{read_version}-{uuid}.txn``, its file under ``_transactions/``."""
        return f"{self.read_version}-{self.uuid}.txn"


def _assign_ids(frags, next_id: int, *, check_only: bool = False) -> tuple[list, int]:
    if frags and next_id + len(frags) - 1 > 0xFFFFFFFF:
        # a row address holds the fragment id in 32 bits, and so does max_fragment_id
        raise CorruptFileError(f"no fragment id left for {len(frags)} new fragment(s): the "
                               f"manifest's max_fragment_id is {next_id - 1}, ids are 32-bit")
    if check_only:
        return [], next_id
    out = []
    for f in frags:
        g = table_pb2.DataFragment()
        g.CopyFrom(f)
        g.id = next_id
        next_id += 1
        out.append(g)
    return out, next_id


def _next_fragment_id(base) -> int:
    """The first free fragment id: after ``max_fragment_id``, or (a manifest written
    before that field, e.g. pylance 0.27) after the largest fragment id."""
    if base.HasField("max_fragment_id"):
        return base.max_fragment_id + 1
    return max((f.id for f in base.fragments), default=-1) + 1


def _apply_replacements(m, base, txn) -> None:
    """Update (rows moved: deletion files on old fragments + new fragments) and
    Rewrite (old fragments replaced by new ones in place, e.g. compaction)."""
    next_id = _next_fragment_id(base)
    if txn.op is Op.UPDATE:
        u = txn.pb.update
        gone = set(u.removed_fragment_ids)
        upd = {f.id: f for f in u.updated_fragments}
        frags = [upd.get(f.id, f) for f in base.fragments if f.id not in gone]
        new, next_id = _assign_ids(u.new_fragments, next_id)
        del u.new_fragments[:]
        u.new_fragments.extend(new)
        frags += new
    else:
        frags = list(base.fragments)
        for g in txn.pb.rewrite.groups:
            old_ids = {f.id for f in g.old_fragments}
            # ids reserved before (a ReserveFragments commit, as compaction makes) stay;
            # id 0 means none was given (pylance's rule)
            new = []
            for f in g.new_fragments:
                if f.id:
                    kept = table_pb2.DataFragment()
                    kept.CopyFrom(f)
                    new.append(kept)
                else:
                    got, next_id = _assign_ids([f], next_id)
                    new.extend(got)
            del g.new_fragments[:]
            g.new_fragments.extend(new)
            pos = next((i for i, f in enumerate(frags) if f.id in old_ids), len(frags))
            frags = [f for f in frags[:pos] if f.id not in old_ids] + new + \
                [f for f in frags[pos:] if f.id not in old_ids]
    del m.fragments[:]
    m.fragments.extend(frags)
    if next_id > _next_fragment_id(base):
        m.max_fragment_id = next_id - 1


def _apply_data_replacement(m, base, dr) -> None:
    """DataReplacement, by the reference's rules: all new files store the same fields;
    in each named fragment the file with exactly those fields and file version takes
    the new file's path and size, or, when the fragment has none of those fields (an
    all-null column), the new file is added. Fragments keep their places (pylance 14;
    the reference's main branch puts the changed ones first)."""
    new_files = [g.new_file for g in dr.replacements]
    if len({tuple(f.fields) for f in new_files}) > 1:
        detail = "".join(f"File {i}: {list(f.fields)}\n" for i, f in enumerate(new_files))
        raise InvalidInputError(f"All new data files must have the same fields, but found "
                                f"different fields:\n{detail}")
    by_id = {f.id: f for f in base.fragments}
    changed = []
    for g in dr.replacements:
        old = by_id.get(g.fragment_id)
        if old is None:
            raise InvalidInputError(f"Fragment being replaced not found in existing fragments "
                                    f"(fragment {g.fragment_id})")
        nf, frag = g.new_file, table_pb2.DataFragment()
        frag.CopyFrom(old)
        covered = set()
        for df in frag.files:
            if list(df.fields) == list(nf.fields) and \
                    (df.file_major_version, df.file_minor_version) == \
                    (nf.file_major_version, nf.file_minor_version):
                df.path, df.file_size_bytes = nf.path, nf.file_size_bytes
            covered.update(df.fields)
        if covered.isdisjoint(nf.fields):
            frag.files.add().CopyFrom(nf)
        if frag == old:
            raise InvalidInputError(
                f"Expected to modify fragment {g.fragment_id} but no changes were made: the new "
                f"data file does not align with any existing data file (its fields and file "
                f"major and minor versions must match one)")
        changed.append(frag)
    new = {f.id: f for f in changed}
    del m.fragments[:]
    m.fragments.extend(new.get(f.id, f) for f in base.fragments)


def _apply_map(target, upd, *, as_bytes: bool = False) -> None:
    """One ``UpdateMap``: replace the whole map or merge into it; an entry without a
    value removes its key."""
    if upd.replace:
        target.clear()
    for e in upd.update_entries:
        if e.HasField("value"):
            target[e.key] = e.value.encode() if as_bytes else e.value
        elif e.key in target:
            del target[e.key]


def _apply_update_config(m, uc) -> None:
    """Config, table metadata, schema metadata and field metadata changes (the new
    ``UpdateMap`` fields, or the older upsert/delete form)."""
    if uc.HasField("config_updates"):
        _apply_map(m.config, uc.config_updates)
    for k, v in uc.upsert_values.items():
        m.config[k] = v
    for k in uc.delete_keys:
        if k in m.config:
            del m.config[k]
    if uc.HasField("table_metadata_updates"):
        _apply_map(m.table_metadata, uc.table_metadata_updates)
    if uc.HasField("schema_metadata_updates"):
        _apply_map(m.schema_metadata, uc.schema_metadata_updates, as_bytes=True)
    for k, v in uc.schema_metadata.items():
        m.schema_metadata[k] = v.encode()
    by_id = {f.id: f for f in m.fields}
    for fid, upd in uc.field_metadata_updates.items():
        if fid not in by_id:
            raise CommitConflictError(f"field metadata update of field id {fid}, which the "
                                      f"schema does not have")
        _apply_map(by_id[fid].metadata, upd, as_bytes=True)
    for fid, fm in uc.field_metadata.items():
        if fid in by_id:
            for k, v in fm.metadata.items():
                by_id[fid].metadata[k] = v.encode()


def build_manifest(base, txn: Transaction, version: int, *, data_format: str,
                   writer_version: str):
    """The manifest for ``version``: ``txn`` applied to ``base`` (None when creating).

    Returns ``(manifest, index_section_bytes)``; the caller carries over the base's
    index section where the operation keeps indices valid.
    """
    m = table_pb2.Manifest()
    op = txn.op
    if op in (Op.RESTORE, Op.CLONE):  # clone: the source manifest, in a new place
        m.CopyFrom(txn.restore_manifest)
        m.ClearField("index_section")
        m.ClearField("transaction_section")
        m.ClearField("transaction_section_deprecated")
        if base is not None and base.HasField("max_fragment_id"):
            m.max_fragment_id = max(base.max_fragment_id, m.max_fragment_id)
    elif op is Op.OVERWRITE:
        o = txn.pb.overwrite
        if base is not None:
            m.config.update(base.config)
            m.table_metadata.update(base.table_metadata)
        m.fields.extend(o.schema)
        for k, v in o.schema_metadata.items():
            m.schema_metadata[k] = v
        for k, v in o.config_upsert_values.items():
            m.config[k] = v
        next_id = (base.max_fragment_id + 1) if base is not None and base.HasField(
            "max_fragment_id") else 0
        frags, next_id = _assign_ids(o.fragments, next_id)
        m.fragments.extend(frags)
        if frags or (base is not None and base.HasField("max_fragment_id")):
            m.max_fragment_id = next_id - 1
    else:
        if base is None:
            raise CommitConflictError(f"cannot {op}: the dataset has no version yet")
        m.CopyFrom(base)
        m.ClearField("index_section")
        m.ClearField("transaction_section")
        m.ClearField("transaction_section_deprecated")
        if op is Op.APPEND:
            next_id = _next_fragment_id(base)
            frags, next_id = _assign_ids(txn.pb.append.fragments, next_id)
            m.fragments.extend(frags)
            if frags:
                m.max_fragment_id = next_id - 1
        elif op is Op.DELETE:
            d = txn.pb.delete
            gone = set(d.deleted_fragment_ids)
            upd = {f.id: f for f in d.updated_fragments}
            keep = []
            for f in base.fragments:
                if f.id in gone:
                    continue
                keep.append(upd.get(f.id, f))
            del m.fragments[:]
            m.fragments.extend(keep)
        elif op is Op.MERGE:
            mg = txn.pb.merge
            del m.fields[:]
            m.fields.extend(mg.schema)
            m.schema_metadata.clear()
            for k, v in mg.schema_metadata.items():
                m.schema_metadata[k] = v
            del m.fragments[:]
            m.fragments.extend(mg.fragments)
        elif op is Op.PROJECT:
            del m.fields[:]
            m.fields.extend(txn.pb.project.schema)
            # data files that hold only dropped fields leave their fragments (pylance)
            kept = {f.id for f in m.fields}
            for frag in m.fragments:
                files = [df for df in frag.files if any(x in kept for x in df.fields)]
                if len(files) != len(frag.files):
                    del frag.files[:]
                    frag.files.extend(files)
        elif op in (Op.UPDATE, Op.REWRITE):
            _apply_replacements(m, base, txn)
        elif op is Op.DATA_REPLACEMENT:
            _apply_data_replacement(m, base, txn.pb.data_replacement)
        elif op is Op.RESERVE_FRAGMENTS:  # ids for a later commit (pylance's compaction)
            top = base.max_fragment_id if base.HasField("max_fragment_id") else 0
            _assign_ids([None] * txn.pb.reserve_fragments.num_fragments, top + 1, check_only=True)
            m.max_fragment_id = top + txn.pb.reserve_fragments.num_fragments
        elif op is Op.UPDATE_CONFIG:
            _apply_update_config(m, txn.pb.update_config)
        elif op is Op.CREATE_INDEX:
            pass  # (fragments and schema unchanged: the index section is next_indices')
        else:
            raise CommitConflictError(f"lancenb cannot commit a {op} transaction")
    m.version = version
    m.ClearField("tag")
    now = time.time_ns()
    m.timestamp.seconds = now // 1_000_000_000
    m.timestamp.nanos = now % 1_000_000_000
    m.writer_version.Clear()
    m.writer_version.library = WRITER_LIBRARY
    m.writer_version.version = writer_version
    if op not in (Op.RESTORE, Op.CLONE):
        m.data_format.file_format = "lance"
        m.data_format.version = data_format
    m.transaction_file = txn.file_name()
    base_stable = base is not None and bool(base.reader_feature_flags & FLAG_STABLE_ROW_IDS)
    if txn.enable_stable_row_ids is not None and op is Op.OVERWRITE:
        stable = txn.enable_stable_row_ids
    else:
        stable = base_stable or (op in (Op.RESTORE, Op.CLONE) and bool(
            m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
    if stable:
        _assign_row_ids(m, base, version)
    else:
        m.next_row_id = 0
    reader, writer = feature_flags_for(m)
    keep = FLAG_STABLE_ROW_IDS if stable else 0
    m.reader_feature_flags = (reader & ~FLAG_STABLE_ROW_IDS) | keep
    m.writer_feature_flags = (writer & ~FLAG_STABLE_ROW_IDS) | keep
    return m


def _assign_row_ids(m, base, version: int) -> None:
    """Give every fragment without a row-id sequence fresh ids from ``next_row_id``
    (ids are never reused), with created/last-updated versions = ``version``."""
    nxt = max(int(m.next_row_id), int(base.next_row_id) if base is not None else 0)
    for f in m.fragments:
        if f.WhichOneof("row_id_sequence") is not None:
            continue
        n = int(f.physical_rows)
        f.inline_row_ids = encode_range_row_ids(nxt, nxt + n)
        f.inline_created_at_versions = encode_version_runs(n, version)
        f.inline_last_updated_at_versions = encode_version_runs(n, version)
        nxt += n
    m.next_row_id = nxt


# -- the index section: pylance's rules for what each operation does to indices ------

FRAG_REUSE_INDEX = "__lance_frag_reuse"
_SYSTEM_INDICES = (FRAG_REUSE_INDEX, "__lance_mem_wal")


def _bitmap(idx) -> BitMap | None:
    if not idx.fragment_bitmap:
        return None
    try:
        return BitMap.deserialize(bytes(idx.fragment_bitmap))
    except Exception as e:  # noqa: BLE001 - pyroaring raises plain ValueError etc.
        raise CorruptFileError(f"index {idx.name!r} has a fragment bitmap that is not a "
                               f"roaring bitmap: {e}") from e


def _set_bitmap(idx, bm: BitMap) -> None:
    idx.fragment_bitmap = bm.serialize()


def _is_vector(idx) -> bool:
    return idx.HasField("index_details") and \
        idx.index_details.type_url.endswith("VectorIndexDetails")


def _retain_relevant(indices: list, m) -> list:
    """Drop indices of fields the schema lost; of several segments of one name keep
    those covering an existing fragment (all empty: the oldest, none for a vector
    index); a lone empty vector index goes (the reference's ``retain_relevant_indices``;
    fragment bitmaps themselves are kept as they are)."""
    field_ids = {f.id for f in m.fields}
    indices = [i for i in indices if all(f in field_ids for f in i.fields)
               or i.name in _SYSTEM_INDICES]
    existing = BitMap(f.id for f in m.fragments)

    def empty(i) -> bool:
        bm = _bitmap(i)
        return bm is None or not (bm & existing)

    by_name: dict[str, list] = {}
    for i in indices:
        if i.name != FRAG_REUSE_INDEX:
            by_name.setdefault(i.name, []).append(i)
    keep = set()
    for same in by_name.values():
        full = [i for i in same if not empty(i)]
        if full:
            keep.update(id(i) for i in full)
        elif len(same) > 1:
            oldest = min(same, key=lambda i: i.dataset_version)
            if not _is_vector(oldest):
                keep.add(id(oldest))
        elif not _is_vector(same[0]):
            keep.add(id(same[0]))
    return [i for i in indices if i.name == FRAG_REUSE_INDEX or id(i) in keep]


def _recalculate(bm: BitMap, groups) -> BitMap:
    """A bitmap after a rewrite: a group's old fragments replaced by its new ones
    where the index covered them (all or none of a group, else refused)."""
    out = BitMap(bm)
    for g in groups:
        olds = [f.id for f in g.old_fragments]
        inside = [i in bm for i in olds]
        if any(inside):
            if not all(inside):
                raise InvalidInputError("The compaction plan included a rewrite group that was "
                                        "a split of indexed and non-indexed data")
            out.difference_update(BitMap(olds))
            out.update(f.id for f in g.new_fragments)
    return out


# index types (details) built over row addresses that a compaction cannot remap
_UNREMAPPABLE = ("ZoneMapIndexDetails", "BloomFilterIndexDetails")


def _rewrite_indices(indices: list, rw, stable: bool) -> None:
    if stable:  # (row ids survive a rewrite: every index follows its fragments but
        # those of row addresses pylance 14 cannot remap: they lose them)
        for i in indices:
            bm = _bitmap(i)
            if bm is None:
                continue
            if i.index_details.type_url.endswith(_UNREMAPPABLE):
                bm.difference_update(BitMap([f.id for g in rw.groups
                                             for f in g.old_fragments]))
                _set_bitmap(i, bm)
            else:
                _set_bitmap(i, _recalculate(bm, rw.groups))
    seen = set()
    for r in rw.rewritten_indices:
        old = bytes(r.old_id.uuid)
        if old in seen:
            raise InvalidInputError("An invalid compaction plan must have been generated "
                                    "because multiple tasks modified the same index")
        seen.add(old)
        target = next((i for i in indices if bytes(i.uuid.uuid) == old), None)
        if target is None:
            raise InvalidInputError("Invalid compaction plan refers to an index which does "
                                    "not exist")
        bm = _bitmap(target)
        if bm is None:
            raise InvalidInputError(f"Cannot rewrite index {target.name!r} which did not "
                                    f"store fragment bitmap")
        if not stable:  # (moved above with stable row ids)
            _set_bitmap(target, _recalculate(bm, rw.groups))
        target.uuid.uuid = bytes(r.new_id.uuid)
        # the replacement's files (sizes of the old ones would be wrong): as pylance 14
        del target.files[:]
        target.files.extend(r.new_index_files)


def _prune_updated_fields(indices: list, u) -> None:
    """An update that rewrote fields in place: its fragments leave the indices of
    those fields."""
    changed = set(u.fields_modified)
    if not changed:
        return
    ids = [f.id for f in u.updated_fragments]
    for i in indices:
        if changed & set(i.fields):
            bm = _bitmap(i)
            if bm is not None:
                bm.difference_update(ids)
                _set_bitmap(i, bm)


def next_indices(base_indices: list, txn: Transaction, m) -> list:
    """The indices of the manifest ``m`` that ``txn`` builds over a version holding
    ``base_indices`` (``IndexMetadata`` protobufs, copied), by pylance's rules:
    CreateIndex replaces indices of the names it creates and removes those it names;
    an overwrite drops all; a delete, update, merge or project drops indices of lost
    fields (:func:`_retain_relevant`); an update that rewrote indexed fields takes
    its fragments out of their bitmaps; a rewrite moves the bitmaps of the indices
    it remapped (all of them with stable row ids) to the new fragments."""
    op = txn.op
    if op is Op.OVERWRITE:
        return []
    out = []
    for i in base_indices:
        c = table_pb2.IndexMetadata()
        c.CopyFrom(i)
        out.append(c)
    if op is Op.CREATE_INDEX:
        ci = txn.pb.create_index
        names = {i.name for i in ci.new_indices}
        gone = {bytes(i.uuid.uuid) for i in ci.removed_indices}
        out = [i for i in out if i.name not in names and bytes(i.uuid.uuid) not in gone]
        return out + list(ci.new_indices)
    if op is Op.REWRITE:
        _rewrite_indices(out, txn.pb.rewrite,
                         bool(m.reader_feature_flags & FLAG_STABLE_ROW_IDS))
        return out
    if op is Op.UPDATE:
        _prune_updated_fields(out, txn.pb.update)
    if op in (Op.DELETE, Op.UPDATE, Op.MERGE, Op.PROJECT):
        return _retain_relevant(out, m)
    return out


def index_section_for(base_mf, txn: Transaction, m) -> bytes | None:
    """The raw index section of the manifest ``m`` that ``txn`` builds on ``base_mf``
    (the :class:`~lancenb.table.manifest.ManifestFile` it is committed over, None
    when creating): :func:`next_indices` of the base's indices, the base's bytes
    themselves when nothing changed; a restore takes the restored version's section."""
    if txn.op is Op.RESTORE:
        return txn.restore_index_section
    if base_mf is None or txn.op is Op.CLONE:
        return None
    raw = base_mf.index_section_bytes()
    base = parse_section(raw, f"manifest {base_mf.name!r}")
    if not base and txn.op is not Op.CREATE_INDEX:
        return None
    new = next_indices(base, txn, m)
    if raw is not None and len(new) == len(base) and all(
            a.SerializeToString() == b.SerializeToString() for a, b in zip(new, base)):
        return raw
    return section_bytes(new)
