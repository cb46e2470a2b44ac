"""``LanceDataset.delete``: rows matching a predicate get deletion-file entries in
their fragments; fragments left with no live row are removed."""

from __future__ import annotations

import numpy as np

from lancenb._proto import transaction_pb2
from lancenb.dataset.write.insert import cleanup, stage_deletions
from lancenb.table.manifest import check_feature_flags
from lancenb.table.transaction import Op, Transaction

__all__ = ["delete_rows"]


def delete_rows(ds, predicate) -> dict:
    """``LanceDataset.delete``: a ``Delete`` transaction with new deletion files for the
    rows of ``ds`` matching ``predicate``; ``ds`` moves to the version committed.
    Returns pylance's ``{"num_deleted_rows": n}`` (the rows that matched)."""
    check_feature_flags(ds.manifest, ds.snapshot.manifest.name, write=True)
    op = transaction_pb2.Transaction.Delete(
        predicate=predicate if isinstance(predicate, str) else str(predicate))
    txn = Transaction(ds.version, Op.DELETE, op)
    written: list[str] = []
    try:
        sc = ds.scanner(columns=[], filter=predicate)  # parsed once
        frags = ds.get_fragments()
        # the filtered scan's own pass: the next fragments' filter columns are read and
        # decoded ahead while this one is evaluated, small fragments are evaluated
        # together, and statistics pages the predicate cannot match are not read
        for frag, live, _, hit in sc.filtered(frags):
            if len(hit):
                phys = (live[hit] if live is not None else hit).astype(np.uint32)
                txn.deleted_rows[frag.fragment_id] = phys
        updated, removed = stage_deletions(ds.snapshot.store, frags, txn.deleted_rows, ds.version,
                                           written)
        txn.pb.delete.updated_fragments.extend(updated)
        txn.pb.delete.deleted_fragment_ids.extend(removed)
    except BaseException:
        cleanup(ds.snapshot.store, written)
        raise
    n = sum(len(rows) for rows in txn.deleted_rows.values())
    ds.snapshot.commit(txn, written)
    return {"num_deleted_rows": n}
