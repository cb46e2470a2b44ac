"""Row changes staged for one commit: rows deleted from their fragments and rows
written anew, committed as one ``Update`` transaction (``delete``, ``update`` and
``merge_insert`` all use it). With stable row ids the moved rows keep their ids
(their last-updated version changes), as in the reference.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb._proto import transaction_pb2
from lancenb.dataset.read import blob
from lancenb.dataset.write.bases import placing
from lancenb.dataset.write.insert import cleanup, stage_deletions, write_data_files
from lancenb.file.version import FileVersion
from lancenb.table.rowids import encode_array_row_ids, encode_version_array, set_row_ids
from lancenb.table.transaction import Op, Transaction

__all__ = ["RowChanges", "carry_row_ids"]


class RowChanges:
    """Collects deleted offsets per fragment and new rows, then commits."""

    def __init__(self, ds):
        self.ds = ds
        self.deleted: dict[int, np.ndarray] = {}
        self.new_tables: list[pa.Table] = []
        self.moved: list[tuple] = []  # (table, row ids, created versions)
        self.file_version = None  # new data files' version (None: the dataset's)
        # merge on the primary key: the KeyExistenceFilter of the inserted keys
        self.inserted_keys = None
        # where new data files go: target_bases names, or target_all_bases' flag
        self.target_bases: list | None = None
        self.target_all_bases: bool | None = None

    def delete(self, frag, phys: np.ndarray) -> None:
        if len(phys):
            self.deleted[frag.fragment_id] = np.asarray(phys, dtype=np.uint32)

    def insert(self, table: pa.Table, row_ids=None, created=None) -> None:
        """New rows; ``row_ids`` (stable row ids) when they are moved rows."""
        if not table.num_rows:
            return
        if self.ds.stable_row_ids and row_ids is not None:
            self.moved.append((table, row_ids, created))
        else:
            self.new_tables.append(table)

    def commit(self, *, uncommitted: bool = False, **retries):
        """Commit the changes; ``uncommitted``: stage the files and return the
        transaction instead (None when nothing changed)."""
        ds = self.ds
        if not self.deleted and not self.new_tables and not self.moved:
            return None
        op = transaction_pb2.Transaction.Update()
        txn = Transaction(ds.version, Op.UPDATE, op)
        written: list[str] = []
        try:
            updated, removed = stage_deletions(ds.snapshot.store, ds.get_fragments(), self.deleted,
                                               ds.version, written)
            op.updated_fragments.extend(updated)
            op.removed_fragment_ids.extend(removed)
            schema = blob.input_schema(ds.snapshot.schema)  # (blob v2 columns: their values)
            version = FileVersion.resolve(self.file_version or ds.data_storage_version)
            # new data files may go to other bases; deletion files stay in the dataset's
            store, targets = placing(ds.snapshot.store, ds.manifest.base_paths,
                                     self.target_bases, self.target_all_bases)

            def write(tables):
                table = pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])
                frags = write_data_files(store, iter(table.to_batches()), schema,
                                         list(ds.manifest.fields), version=version,
                                         written=written)
                if targets is not None:
                    targets.mark(frags)
                return frags
            if self.moved:  # moved rows keep their ids: fragments of their own
                new = write([t for t, _, _ in self.moved])
                carry_row_ids(new, np.concatenate([i for _, i, _ in self.moved]),
                               np.concatenate([c for _, _, c in self.moved]), ds, written)
                op.new_fragments.extend(new)
            if self.new_tables:  # fresh rows get fresh ids at commit
                op.new_fragments.extend(write(self.new_tables))
            if self.inserted_keys is not None:
                op.inserted_rows.CopyFrom(self.inserted_keys)
            txn.pb.update.CopyFrom(op)
        except BaseException:
            cleanup(ds.snapshot.store, written)
            raise
        if uncommitted:
            return txn
        ds.snapshot.commit(txn, written, **retries)
        return None


def carry_row_ids(frags, ids: np.ndarray, created: np.ndarray, ds, written) -> None:
    """Give the fragments of moved rows those rows' ids and versions."""
    pos = 0
    new_version = ds.version + 1
    for f in frags:
        n = f.physical_rows
        set_row_ids(f, encode_array_row_ids(ids[pos:pos + n]), ds.snapshot.store, written)
        f.inline_created_at_versions = encode_version_array(created[pos:pos + n])
        f.inline_last_updated_at_versions = encode_version_array(
            np.full(n, new_version, np.uint64))
        pos += n
