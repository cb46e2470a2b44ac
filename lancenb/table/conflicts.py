"""Which concurrent transactions a commit can be rebased over: pylance's rules.

A transaction built against version ``r`` is committed as the next version only
after it has been checked against the transaction of every version committed
after ``r``. Each check has one of three answers, as in the reference's conflict
resolver (``rust/lance/src/io/commit/conflict_resolver.rs``), and lancenb gives the
answer pylance 14 gives (checked pair by pair against pylance in
``tests/table/test_commit_conflicts.py``):

* compatible: commit on top of the newer version (a delete over another delete of
  the same fragment is *rebased*: the two deletion sets merged);
* retryable (:class:`RetryableCommitConflictError`): running the operation again on
  the new version may succeed;
* incompatible (:class:`CommitConflictError`): the dataset was replaced (overwrite,
  restore) or both changed the same configuration keys.

Ours (rows) against theirs (columns); ``ok`` compatible, ``R`` retryable, ``X``
incompatible, ``F`` retryable when both touch a same fragment, else ok,
``D`` as F but a delete or update whose rows are known is rebased instead, ``K`` incompatible
when both set or remove a same config key (or change schema/field metadata), else ok,
``N`` retryable unless the merge/project says ``preserves_nullability`` (new
fragments written against the old schema may then omit its new columns), else ok:

==============  ======  ======  ======  =========  ======  =======  =======  =====  ======
ours            append  delete  update  overwrite  restore  merge   project  rewr.  config
==============  ======  ======  ======  =========  ======  =======  =======  =====  ======
append          ok      ok      ok      X          X        N       N        ok     ok
delete          ok      D       D       X          X        R       ok       F      ok
update          ok      D       D       X          X        R       N        F      ok
overwrite       ok      ok      ok      R          ok       ok      ok       ok     K
restore         ok      ok      ok      ok         ok       ok      ok       ok     ok
merge           R       R       R       X          X        R       X        R      ok
project         N       ok      N       X          X        R       R        ok     ok
rewrite         ok      F       F       X          X        R       ok       F      ok
update_config   ok      ok      ok      K          ok       ok      ok       ok     K
==============  ======  ======  ======  =========  ======  =======  =======  =====  ======

Against an index creation, a rewrite conflicts (retryable) when a new index covers
a fragment it rewrites; the other operations are compatible with it. A data
replacement conflicts (retryable) with a delete, update or rewrite of its fragments
and with a merge being committed. A data replacement being committed is retryable
against an index creation covering a field it replaces, a rewrite of a fragment it
replaces, and another replacement of a same field in a same fragment; incompatible
with an overwrite or restore; compatible with anything else (it copies the fragments
it changes from the latest manifest, so their new deletion files are kept). pylance commits a
``Delete``/``Update`` given to ``LanceDataset.commit`` without knowing which rows it
changed, so it cannot rebase it (retryable); ``LanceDataset.delete``, ``update`` and
``merge_insert`` know, and rebase. An update rebased over a change that removed rows
it updated is refused (pylance drops its new copies of those rows).

A merge on the schema's unenforced primary key (``lance-schema:unenforced-primary-key``
field metadata) records the keys it inserted (``Update.inserted_rows``, a bloom filter
of the keys). Such an update is retryable against a concurrent update that inserted a
key it may share (the two filters overlap, or their key columns differ), against an
update that recorded no keys, and against an append: either may have inserted the same
key, and committing both would duplicate it. ``merge_insert`` then runs again on the
new version, where the key is found.

A transaction that cannot be read, or an operation lancenb does not know, is a
conflict: lancenb cannot prove the two compatible.
"""

from __future__ import annotations

import numpy as np
from pyroaring import BitMap

from lancenb.errors import CommitConflictError, RetryableCommitConflictError
from lancenb.table.transaction import (
    FRAG_REUSE_INDEX,
    Op,
    modified_fragment_ids,
    removed_fragment_ids,
)

__all__ = ["check_conflict", "check_gap", "key_sets_may_overlap"]

OK, RETRY, INCOMPATIBLE = "ok", "retry", "incompatible"

# operations that never touch existing fragments, schema or config keys
_QUIET = frozenset({Op.RESERVE_FRAGMENTS, Op.CLONE, Op.UPDATE_BASES})


def _overlap(ours, other) -> str:
    return RETRY if modified_fragment_ids(ours.pb) & modified_fragment_ids(other) else OK


def _index_overlap(ours, other) -> str:
    """A rewrite against an index creation: retryable when a new index covers a
    fragment being rewritten (or does not say which fragments it covers)."""
    return _indices_touch(other.create_index.new_indices, modified_fragment_ids(ours.pb))


def _config_changes(pb) -> tuple[set, set, bool, set]:
    """(config keys set, config keys removed, schema metadata changed, field ids whose
    metadata changed) of an overwrite or config update."""
    if Op.of(pb) is Op.OVERWRITE:
        return set(pb.overwrite.config_upsert_values), set(), False, set()
    uc = pb.update_config
    entries = list(uc.config_updates.update_entries) if uc.HasField("config_updates") else []
    upserts = {e.key for e in entries if e.HasField("value")} | set(uc.upsert_values)
    removes = {e.key for e in entries if not e.HasField("value")} | set(uc.delete_keys)
    schema_meta = uc.HasField("schema_metadata_updates") or bool(uc.schema_metadata)
    fields = set(uc.field_metadata_updates) | set(uc.field_metadata)
    return upserts, removes, schema_meta, fields


def _config_keys(ours, other, *, overwrite: bool = False) -> str:
    """Both set a same config key, or one sets what the other removes; two config
    updates of the schema metadata or of a same field's metadata; a schema or field
    metadata update against an overwrite (which replaces the schema)."""
    up, rm, schema_meta, fields = _config_changes(ours.pb)
    o_up, o_rm, o_schema_meta, o_fields = _config_changes(other)
    if up & (o_up | o_rm) or o_up & (up | rm):
        return INCOMPATIBLE
    if overwrite and (schema_meta or fields):
        return INCOMPATIBLE
    if Op.of(other) is Op.UPDATE_CONFIG and (
            (schema_meta and o_schema_meta) or fields & o_fields):
        return INCOMPATIBLE
    return OK


def _rows_rebase(ours, other) -> str:
    """Our delete/update against another one: compatible when they change different
    fragments; a delete or update that knows its rows (``LanceDataset.delete``,
    ``update``, ``merge_insert``; not an operation given to ``LanceDataset.commit``)
    is rebased over another change of the same fragments' deletion files (the commit
    merges the two sets; an update whose rows the other removed is refused then);
    else retryable."""
    mine = modified_fragment_ids(ours.pb)
    o = Op.of(other).message(other)
    removed = removed_fragment_ids(other)
    touched = {f.id for f in o.updated_fragments} | removed
    overlap = mine & touched
    if not overlap:
        return OK
    msg = ours.message
    if not ours.rows_known or not msg.updated_fragments:
        return RETRY  # (pylance rebases only a change that knows the rows it changed)
    if overlap & removed:
        return RETRY  # they removed a fragment we change
    mine_by_id = {f.id: f for f in msg.updated_fragments}
    if ours.op is Op.UPDATE and overlap - set(mine_by_id):
        return RETRY  # we moved all rows of a fragment they changed: ours would revive theirs
    for f in o.updated_fragments:
        if f.id in mine_by_id and list(f.files) != list(mine_by_id[f.id].files):
            return RETRY  # its data files changed, not only its deletions
    ours.needs_merge |= overlap & set(mine_by_id)
    return OK


def _schema_grew(ours, other) -> str:
    """New fragments against a schema change: retryable unless the change says it
    adds no column those fragments could not omit (``preserves_nullability``)."""
    return OK if Op.of(other).message(other).preserves_nullability else RETRY


def _keeps_nullability(ours, other) -> str:
    """Our project against new fragments: as :func:`_schema_grew`, from our side."""
    return OK if ours.pb.project.preserves_nullability else RETRY


def check_gap(ours, initial, latest, missing: int, uri: str) -> None:
    """Version ``missing``, committed after ``ours.read_version``, was removed by
    ``cleanup_old_versions``, so its transaction cannot be checked. pylance then
    skips it; lancenb commits an append, delete or update only when what the
    transaction relies on is unchanged between the manifest it read (``initial``)
    and ``latest``: the schema (append, update) and the fragments it changes (same
    data files; same deletion file, or, for a delete or update that knows its rows, a
    merge of the deletion sets, where pylance would bring back the rows deleted in
    between).
    An ``UpdateConfig`` is committed as pylance commits it: it only sets keys on top
    of the latest manifest, which holds whatever the removed version did (automatic
    cleanup removes versions behind a handle that then changes the config, as
    ``disable_auto_cleanup`` does).
    Anything else is a retryable conflict naming the missing version."""
    mine = ours.op
    why = None
    if mine is Op.UPDATE_CONFIG:
        return
    if mine not in (Op.APPEND, Op.DELETE, Op.UPDATE):
        why = f"lancenb cannot tell whether it conflicts with this {mine}"
    elif initial is None:
        why = f"so was version {ours.read_version} this {mine} read"
    elif mine is not Op.DELETE and list(initial.fields) != list(latest.fields):
        why = "the schema changed since"
    else:
        then = {f.id: f for f in initial.fragments}
        now = {f.id: f for f in latest.fragments}
        updated = set() if mine is Op.APPEND else {f.id for f in ours.message.updated_fragments}
        for fid in sorted(modified_fragment_ids(ours.pb)):
            a, b = then.get(fid), now.get(fid)
            if a is None or b is None or list(a.files) != list(b.files):
                why = f"fragment {fid}, which this {mine} changes, was removed or rewritten since"
                break
            same = a.HasField("deletion_file") == b.HasField("deletion_file") and (
                not a.HasField("deletion_file") or a.deletion_file == b.deletion_file)
            if same or (fid not in updated and mine is Op.DELETE):
                continue  # (a fragment deleted whole stays removed whatever was deleted)
            if fid in updated and ours.rows_known:
                ours.needs_merge.add(fid)  # (an update's rows are checked at the merge)
                continue
            why = f"rows of fragment {fid}, which this {mine} changes, were deleted since"
            break
    if why is not None:
        raise RetryableCommitConflictError(
            f"Retryable commit conflict for version {missing}: version {missing} of {uri!r}, "
            f"committed after version {ours.read_version} that this {mine} read, was removed "
            f"by cleanup_old_versions and {why}; open the dataset again and retry")


def _name(op: Op | None) -> str:
    return op.value if op is not None else "unknown"


def check_conflict(ours, other, other_version: int) -> None:
    """Raise if ``ours`` (a :class:`~lancenb.table.transaction.Transaction`) cannot
    be committed after ``other`` (a transaction protobuf committed as version
    ``other_version``, None when it cannot be read); mark what to rebase in place."""
    mine = ours.op
    theirs = Op.of(other)
    if theirs is None:
        raise CommitConflictError(
            f"Commit conflict for version {other_version}: the transaction of version "
            f"{other_version}, committed after version {ours.read_version} that this {mine} "
            f"read, cannot be read, so lancenb cannot tell whether the two are compatible")
    rules = _RULES.get(mine)
    if rules is None:
        raise CommitConflictError(f"Commit conflict for version {other_version}: lancenb "
                                  f"cannot commit a {mine} transaction concurrently")
    rule = rules.get(theirs, OK if theirs in _QUIET or theirs in _KNOWN else None)
    answer = rule(ours, other) if callable(rule) else rule
    if answer == OK and mine is Op.UPDATE and _same_keys_maybe(ours, other, theirs):
        answer = RETRY
    if answer == OK:
        return
    if answer == RETRY:
        raise RetryableCommitConflictError(
            f"Retryable commit conflict for version {other_version}: this {mine} transaction "
            f"(read version {ours.read_version}) was preempted by the concurrent "
            f"{_name(theirs)} transaction committed as version {other_version}; run the "
            f"{mine} again on the new version")
    why = (f"the dataset was replaced (by the {theirs})" if theirs in (Op.OVERWRITE, Op.RESTORE)
           else f"lancenb does not know the {theirs} operation" if answer is None
           else "both change the same configuration or metadata" if Op.UPDATE_CONFIG in (
               mine, theirs) else f"lancenb cannot commit over a {theirs}")
    raise CommitConflictError(
        f"Commit conflict for version {other_version}: this {mine} transaction (read "
        f"version {ours.read_version}) is incompatible with the concurrent {_name(theirs)} "
        f"transaction committed as version {other_version}: {why}")


def _same_keys_maybe(ours, other, theirs: Op | None) -> bool:
    """Whether our primary-key merge may insert a key the concurrent ``other`` inserted
    too (always False for an update that recorded no keys)."""
    mine = ours.pb.update
    if not mine.HasField("inserted_rows"):
        return False
    if theirs is Op.APPEND:
        return True
    if theirs is not Op.UPDATE:
        return False
    if not other.update.HasField("inserted_rows"):
        return True
    return key_sets_may_overlap(mine.inserted_rows, other.update.inserted_rows)


def key_sets_may_overlap(a, b) -> bool:
    """Whether two ``KeyExistenceFilter`` messages may share a key. Exact hash sets are
    compared exactly; two bloom filters of one configuration share a key only if some
    block has, in each of its eight words, a bit set in both (a shared key sets one bit
    per word of one block in each). Anything else (other key columns, other sizes,
    one exact and one bloom) may overlap."""
    if list(a.field_ids) != list(b.field_ids):
        return True
    # a filter without data is an empty set of exact hashes (pylance's reading)
    kinds = (a.WhichOneof("data") or "exact", b.WhichOneof("data") or "exact")
    if kinds == ("exact", "exact"):
        return bool(set(a.exact.key_hashes) & set(b.exact.key_hashes))
    if kinds != ("bloom", "bloom"):
        return True  # hashes of different schemes cannot be compared
    x, y = a.bloom, b.bloom
    if (x.number_of_items, x.probability, len(x.bitmap)) != (
            y.number_of_items, y.probability, len(y.bitmap)) or len(x.bitmap) % 32:
        return True
    both = np.frombuffer(x.bitmap, "<u4") & np.frombuffer(y.bitmap, "<u4")
    return bool(np.any(np.all(both.reshape(-1, 8) != 0, axis=1)))


# every operation the rules above know (others are conflicts: unknown to lancenb)
_KNOWN = frozenset(Op)


# ours -> theirs -> answer (callables decide from both transactions); absent: OK
_RULES: dict[Op, dict] = {}


def _row_change(mine: Op) -> dict:
    """delete / update: conflicts with changes to the fragments they change."""
    return {
        Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE, Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE,
        Op.MERGE: RETRY,
        Op.PROJECT: _schema_grew if mine is Op.UPDATE else OK,  # (new fragments)
        Op.REWRITE: lambda ours, other: _overlap(ours, other),
        Op.DATA_REPLACEMENT: lambda ours, other: _overlap(ours, other),
        Op.DELETE: _rows_rebase, Op.UPDATE: _rows_rebase,
    }


_RULES[Op.APPEND] = {Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE,
                    Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE, Op.MERGE: _schema_grew,
                    Op.PROJECT: _schema_grew}
_RULES[Op.DELETE] = _row_change(Op.DELETE)
_RULES[Op.UPDATE] = _row_change(Op.UPDATE)
_RULES[Op.OVERWRITE] = {Op.OVERWRITE: RETRY, Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE,
                       Op.UPDATE_CONFIG: lambda ours, other: _config_keys(ours, other)}
_RULES[Op.RESTORE] = {Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE}
_RULES[Op.CLONE] = {}
# compaction's first step takes fragment ids above whatever was committed since
_RULES[Op.RESERVE_FRAGMENTS] = {Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE}
_RULES[Op.MERGE] = {
    **{op: RETRY for op in (Op.APPEND, Op.DELETE, Op.UPDATE, Op.REWRITE, Op.MERGE,
                            Op.DATA_REPLACEMENT)},
    **{op: INCOMPATIBLE for op in (Op.OVERWRITE, Op.RESTORE, Op.PROJECT, Op.UPDATE_MEM_WAL_STATE)}}
_RULES[Op.PROJECT] = {
    Op.APPEND: _keeps_nullability, Op.UPDATE: _keeps_nullability, Op.MERGE: RETRY,
    Op.PROJECT: RETRY,
    Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE, Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE}
_RULES[Op.REWRITE] = {
    Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE, Op.MERGE: RETRY,
    **{op: (lambda ours, other: _overlap(ours, other))
       for op in (Op.DELETE, Op.UPDATE, Op.REWRITE, Op.DATA_REPLACEMENT)},
    Op.CREATE_INDEX: lambda ours, other: _index_overlap(ours, other)}
_RULES[Op.UPDATE_CONFIG] = {
    Op.OVERWRITE: lambda ours, other: _config_keys(ours, other, overwrite=True),
    Op.UPDATE_CONFIG: lambda ours, other: _config_keys(ours, other)}


def _index_fields_replaced(ours, other) -> str:
    """Our index creation against a data replacement: retryable when a replaced file
    holds a field a new index covers."""
    fields = {f for i in ours.pb.create_index.new_indices for f in i.fields}
    for g in other.data_replacement.replacements:
        if fields & set(g.new_file.fields):
            return RETRY
    return OK


def _replaced_fields_indexed(ours, other) -> str:
    """Our data replacement against an index creation: retryable when a new index
    covers a field the replacement's files hold."""
    fields = {f for i in other.create_index.new_indices for f in i.fields}
    for g in ours.pb.data_replacement.replacements:
        if fields & set(g.new_file.fields):
            return RETRY
    return OK


def _replacements_overlap(ours, other) -> str:
    """Two data replacements: retryable when both replace a same field of a same
    fragment."""
    theirs = {}
    for g in other.data_replacement.replacements:
        theirs.setdefault(g.fragment_id, set()).update(g.new_file.fields)
    for g in ours.pb.data_replacement.replacements:
        if theirs.get(g.fragment_id, set()) & set(g.new_file.fields):
            return RETRY
    return OK


def _index_rewritten(ours, other) -> str:
    """Our index creation against a rewrite: retryable when the rewrite moved rows of
    a fragment a new index covers (or a new index does not say which it covers)."""
    return _indices_touch(ours.pb.create_index.new_indices, modified_fragment_ids(other))


def _indices_touch(new_indices, fragment_ids) -> str:
    """RETRY when one of ``new_indices`` covers a fragment of ``fragment_ids`` (or does
    not say which fragments it covers, or says it unreadably), else OK."""
    for idx in new_indices:
        if not idx.fragment_bitmap:
            return RETRY
        try:
            covered = BitMap.deserialize(bytes(idx.fragment_bitmap))
        except Exception:  # noqa: BLE001 - pyroaring raises plain ValueError etc.
            return RETRY
        if any(i in covered for i in fragment_ids):
            return RETRY
    return OK


def _frag_reuse_both(ours, other) -> str:
    """Two index creations conflict only when both rewrite the fragment-reuse index."""
    name = FRAG_REUSE_INDEX
    mine = any(i.name == name for i in ours.pb.create_index.new_indices)
    theirs = any(i.name == name for i in other.create_index.new_indices)
    return RETRY if mine and theirs else OK


# (pylance: indices are found by uuid, and the rows they indexed keep their ids through
# deletes, updates, merges and projects)
_RULES[Op.CREATE_INDEX] = {
    Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE, Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE,
    Op.REWRITE: _index_rewritten, Op.DATA_REPLACEMENT: _index_fields_replaced,
    Op.CREATE_INDEX: _frag_reuse_both}
# (pylance: a data replacement copies each fragment it changes from the latest manifest,
# so new deletion files and new columns are kept)
_RULES[Op.DATA_REPLACEMENT] = {
    Op.OVERWRITE: INCOMPATIBLE, Op.RESTORE: INCOMPATIBLE, Op.UPDATE_MEM_WAL_STATE: INCOMPATIBLE,
    Op.REWRITE: lambda ours, other: _overlap(ours, other),
    Op.CREATE_INDEX: _replaced_fields_indexed, Op.DATA_REPLACEMENT: _replacements_overlap}
