"""``LanceDataset.delete``: rows matching a predicate get deletion-file entries in
their fragments; fragments left with no live row are removed."""

from __future__ import annotations


import re

import numpy as np
import pyarrow as pa

from lancenb._proto import transaction_pb2
from lancenb.dataset.operations import transaction_of
from lancenb.dataset.read import blob
from lancenb.dataset.write.insert import cleanup, normalize_input, stage_deletions, write_data_files
from lancenb.errors import (
    InvalidInputError,
    MergeInsertError,
    NotSupportedError,
    SchemaError,
)
from lancenb.expr import engine as sql
from lancenb.file import jsonb
from lancenb.file.version import FileVersion
from lancenb.table.manifest import check_feature_flags
from lancenb.table.rowids import encode_array_row_ids, encode_version_array, set_row_ids
from lancenb.table.transaction import Transaction
from lancenb.dataset.write.changes import RowChanges, carry_row_ids

__all__ = ['delete_rows']


def delete_rows(ds, predicate) -> dict:
    """``LanceDataset.delete``: a ``Delete`` transaction with new deletion files for the
    rows of ``ds`` matching ``predicate``; ``ds`` moves to the version committed.
    Returns pylance's ``{"num_deleted_rows": n}`` (the rows that matched)."""
    check_feature_flags(ds.manifest, ds._mf.name, write=True)
    op = transaction_pb2.Transaction.Delete(
        predicate=predicate if isinstance(predicate, str) else str(predicate))
    txn = Transaction(ds.version, "delete", op)
    written: list[str] = []
    try:
        sc = ds.scanner(columns=[], filter=predicate)  # parsed once
        frags = ds.get_fragments()
        # the filtered scan's own pass: the next fragments' filter columns are read and
        # decoded ahead while this one is evaluated, small fragments are evaluated
        # together, and statistics pages the predicate cannot match are not read
        for frag, live, _, hit in sc._filtered(frags):
            if len(hit):
                phys = (live[hit] if live is not None else hit).astype(np.uint32)
                txn.deleted_rows[frag.fragment_id] = phys
        updated, removed = stage_deletions(ds._store, frags, txn.deleted_rows, ds.version,
                                           written)
        txn.pb.delete.updated_fragments.extend(updated)
        txn.pb.delete.deleted_fragment_ids.extend(removed)
    except BaseException:
        cleanup(ds._store, written)
        raise
    n = sum(len(rows) for rows in txn.deleted_rows.values())
    ds._commit(txn, written)
    return {"num_deleted_rows": n}
