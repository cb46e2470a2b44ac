"""Random access to a dataset's rows: by logical index (``LanceDataset.take``), by row
id or row address (``_take_rows``, used by blob reads and ``take_blobs``).

Indices are grouped per fragment, read once each in physical order, and the result
put back in the order asked for (repeats allowed). Example: ``take(ds, [5, 0, 5])``
reads rows 0 and 5 once and returns rows 5, 0, 5.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.dataset.fragment import MAX_FRAGMENT_ROWS, LanceFragment
from lancenb.dataset.read.nested import nested_request, prune_nested
from lancenb.encodings.structural import dictarray
from lancenb.errors import CorruptFileError, InvalidInputError, LanceError
from lancenb.file import same_shape
from lancenb.kernels import protowire
from lancenb.table.manifest import manifest_span

__all__ = ["take", "take_rows", "row_id_index"]


def take(ds, indices, columns=None, *, with_row_id=False, with_row_address=False,
         blob_handling=None) -> pa.Table:
    """Rows at logical ``indices`` (deleted rows skipped), in the order given;
    blob columns as descriptions unless ``blob_handling="all_binary"``."""
    nested = nested_request(ds.snapshot.schema, columns)
    if nested is not None:
        table = take(ds, indices, nested[0], with_row_id=with_row_id,
                     with_row_address=with_row_address, blob_handling=blob_handling)
        return prune_nested(table, nested[1])
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    starts = _live_starts(ds)
    total = int(starts[-1])
    if idx.size and (idx.min() < 0 or idx.max() >= total):
        bad = int(idx[(idx < 0) | (idx >= total)][0])
        raise InvalidInputError(f"take: index {bad} is out of range for a dataset of "
                                f"{total} rows")
    sc = ds.scanner(columns=columns, with_row_id=with_row_id,
                      with_row_address=with_row_address, blob_handling=blob_handling)
    frag_of = np.searchsorted(starts, idx, side="right") - 1
    fast = _take_small(ds, sc, idx - starts[frag_of], frag_of)
    if fast is not None:
        return sc.to_public(fast)
    parts, positions = [], []
    for fi in np.unique(frag_of):
        frag = _fragment(ds, int(fi))
        sel = np.flatnonzero(frag_of == fi)
        local = idx[sel] - starts[fi]
        live = frag.live_offsets()
        phys = live[local] if live is not None else local
        uniq, inverse = np.unique(phys, return_inverse=True)
        t = frag.take_physical(sc.columns, uniq, blob_handling=sc.blob_handling)
        t = sc.with_ids(frag, t, uniq)
        if len(uniq) != len(phys) or np.any(np.diff(inverse) < 0):
            t = dictarray.take(t, pa.array(inverse))
        parts.append(t)
        positions.append(sel)
    schema = sc.stored_schema()
    if not parts:
        return sc.to_public(schema.empty_table())
    table = pa.concat_tables([p.replace_schema_metadata(schema.metadata) for p in parts])
    order = np.concatenate(positions)
    if np.any(np.diff(order) < 0):
        inv = np.empty_like(order)
        inv[order] = np.arange(len(order))
        table = dictarray.take(table, pa.array(inv))
    return sc.to_public(sc.ordered(sc.project_with_ids(dictarray.combine_chunks(table))))



def _take_small(ds, sc, local: np.ndarray, frag_of: np.ndarray) -> pa.Table | None:
    """The take when each fragment it touches keeps the projected columns in one small
    data file (:meth:`LanceFragment.small_file_for`): the files of each shape decoded
    together and every row gathered at once (:func:`same_shape.take_small`), the
    result built once, in the order asked. None when that does not apply (a large or
    nested column, blobs, stable row ids, a page of another kind, or a fault, which
    the fragment-by-fragment read then names)."""
    cols = sc.columns
    if (not len(local) or not cols or sc.projection is not None
            or (sc.with_row_id and ds.stable_row_ids) or sc.output_order is not None
            or sc.with_row_offset):
        return None
    uniq, inverse = np.unique(frag_of, return_inverse=True)
    phys = local.copy()
    fids = np.empty(len(uniq), np.int64)
    shapes: dict = {}  # shape -> (files, their fragment positions in uniq, field indices)
    for k, fi in enumerate(uniq.tolist()):
        frag = _fragment(ds, fi)
        try:
            got = frag.small_file_for(cols)
        except LanceError:
            return None
        if got is None:
            return None
        reader, fields = got
        files, which, fields0 = shapes.setdefault(reader.shape_key, ([], [], fields))
        if fields != fields0:
            return None
        files.append(reader)
        which.append(k)
        fids[k] = frag.fragment_id
        if frag.protobuf.HasField("deletion_file"):
            sel = inverse == k
            phys[sel] = frag.live_offsets()[local[sel]]
    arrays = None
    order = []
    for files, which, fields in shapes.values():
        file_of = np.full(len(uniq), -1, np.int64)
        file_of[which] = np.arange(len(which))
        file_pos = file_of[inverse]
        sel = np.flatnonzero(file_pos >= 0)
        try:
            got = same_shape.take_small(files, fields, file_pos[sel], phys[sel])
        except LanceError:
            return None
        if got is None:
            return None
        arrays = got if arrays is None else [pa.concat_arrays([a, b])
                                             for a, b in zip(arrays, got)]
        order.append(sel)
    if len(order) > 1:  # several shapes: back to the order asked
        pos = np.concatenate(order)
        inv = np.empty_like(pos)
        inv[pos] = np.arange(len(pos))
        arrays = [a.take(pa.array(inv)) for a in arrays]
    if sc.with_row_id or sc.with_row_address:
        addr = (fids[inverse].astype(np.uint64) << np.uint64(32)) | phys.astype(np.uint64)
        arrays += [pa.array(addr, pa.uint64())] * (sc.with_row_id + sc.with_row_address)
    return pa.Table.from_arrays(arrays, schema=sc.stored_schema())


def _fragment(ds, i: int) -> LanceFragment:
    """The ``i``-th fragment of ``ds``: its object when the dataset made them all
    already, else one made for it alone (a take touches few of many fragments)."""
    if ds._fragments is not None:
        return ds._fragments[i]
    return LanceFragment(ds, ds.snapshot.manifest.manifest.fragments[i])


def _live_starts(ds) -> np.ndarray:
    """Where each fragment's live rows start among the dataset's (int64, one more
    entry than fragments: the last is the total), once per dataset object. Read from
    the manifest: a fragment without a deletion file has its physical rows; only the
    others count theirs (no fragment objects, no per-fragment lookups)."""
    starts = ds.snapshot.cache.get("live_starts")
    if starts is None:
        pbs = ds.snapshot.manifest.manifest.fragments
        counts, deleted = _fragment_rows(ds.snapshot.manifest)
        for i in np.flatnonzero(deleted).tolist():
            counts[i] = _fragment(ds, i).count_rows()
        starts = np.zeros(len(pbs) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        ds.snapshot.cache["live_starts"] = starts
    return starts


def _fragment_rows(mf) -> tuple[np.ndarray, np.ndarray]:
    """``physical_rows`` (int64) and whether there is a deletion file (bool) of each
    fragment of the manifest file ``mf``: one walk of its bytes
    (:func:`kernels.protowire.fragment_rows`, ~0.1 ms for 2,000 fragments where a
    Python loop over the parsed fragments takes ~1 ms), that loop when the walk does
    not agree with the parsed message."""
    pbs = mf.manifest.fragments
    n = len(pbs)
    try:
        a, b = manifest_span(mf.raw, mf.name)
    except LanceError:
        a = b = None
    if a is not None and n:
        rows = np.empty(n, np.uint64)
        deleted = np.empty(n, np.uint8)
        got = protowire.fragment_rows(np.frombuffer(mf.raw, np.uint8), a, b, rows, deleted)
        if (got == n and int(rows[0]) == pbs[0].physical_rows
                and int(rows[-1]) == pbs[n - 1].physical_rows):
            return _checked_rows(rows, mf), deleted.astype(bool)
    rows = np.fromiter((f.physical_rows for f in pbs), dtype=np.uint64, count=n)
    deleted = np.fromiter((f.HasField("deletion_file") for f in pbs), dtype=bool, count=n)
    return _checked_rows(rows, mf), deleted


def _checked_rows(rows: np.ndarray, mf) -> np.ndarray:
    """``rows`` (uint64) as int64, every count within what a fragment can hold (row
    addresses have 32 bits of row offset): a manifest claiming more is corrupt."""
    bad = np.flatnonzero(rows > MAX_FRAGMENT_ROWS)
    if bad.size:
        i = int(bad[0])
        raise CorruptFileError(f"manifest {mf.name!r}: fragment "
                               f"{mf.manifest.fragments[i].id} has physical_rows {int(rows[i])}, "
                               f"more than a fragment can hold ({MAX_FRAGMENT_ROWS})")
    return rows.astype(np.int64)


def take_rows(ds, row_ids, columns=None, *, by_address=False, **kwargs) -> pa.Table:
    """Rows by row id (stable row ids) or row address (``by_address``, or without
    stable row ids), in the order given."""
    nested = nested_request(ds.snapshot.schema, columns)
    if nested is not None:
        return prune_nested(take_rows(ds, row_ids, nested[0], by_address=by_address,
                                      **kwargs), nested[1])
    ids = np.asarray(row_ids, dtype=np.uint64).reshape(-1)
    frags = {f.fragment_id: f for f in ds.get_fragments()}
    if ds.stable_row_ids and not by_address:
        sorted_ids, frag_of, off_of = row_id_index(ds)
        pos = np.searchsorted(sorted_ids, ids)
        ok = (pos < len(sorted_ids)) & (sorted_ids[np.minimum(pos, len(sorted_ids) - 1)]
                                        == ids) if len(sorted_ids) else \
            np.zeros(len(ids), bool)
        if not ok.all():
            raise InvalidInputError(f"no row with id {int(ids[~ok][0])}")
        fid, off = frag_of[pos], off_of[pos]
    else:
        fid, off = (ids >> np.uint64(32)).astype(np.int64), \
            (ids & np.uint64(0xFFFFFFFF)).astype(np.int64)
    sc = ds.scanner(columns=columns, **kwargs)
    parts, positions = [], []
    for f in np.unique(fid):
        frag = frags.get(int(f))
        sel = np.flatnonzero(fid == f)
        if frag is None or np.any(off[sel] >= frag.physical_rows) or np.any(
                np.isin(off[sel], frag.deleted_offsets())):
            raise InvalidInputError(f"row(s) {ids[sel][:3].tolist()} do not exist or are "
                                    f"deleted")
        uniq, inverse = np.unique(off[sel], return_inverse=True)
        t = sc.with_ids(frag, frag.take_physical(sc.columns, uniq,
                                                  blob_handling=sc.blob_handling), uniq)
        parts.append(dictarray.take(t, pa.array(inverse)))
        positions.append(sel)
    if not parts:
        return sc.to_public(sc.stored_schema().empty_table())
    table = pa.concat_tables(parts)
    order = np.concatenate(positions)
    inv = np.empty_like(order)
    inv[order] = np.arange(len(order))
    return sc.to_public(sc.ordered(sc.project_with_ids(
        dictarray.combine_chunks(dictarray.take(table, pa.array(inv))))))



def row_id_index(ds):
    """Sorted row ids with their fragment id and offset (built once, cached)."""
    key = ("row_id_index",)
    if key not in ds.snapshot.cache:
        ids, fr, off = [], [], []
        for f in ds.get_fragments():  # live rows only: a moved row's old copy is
            live = f.live_offsets()        # deleted and must not shadow the new one
            o = np.arange(f.physical_rows, dtype=np.int64) if live is None else live
            ids.append(f.row_ids()[o])
            fr.append(np.full(len(o), f.fragment_id, np.int64))
            off.append(o)
        ids_a = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
        order = np.argsort(ids_a, kind="stable")
        ds.snapshot.cache[key] = (ids_a[order], np.concatenate(fr)[order] if fr else ids_a,
                            np.concatenate(off)[order] if off else ids_a)
    return ds.snapshot.cache[key]
