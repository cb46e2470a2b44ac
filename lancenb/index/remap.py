"""Index remapping after compaction, as pylance 14 does it.

Without stable row ids a row's id is its address (fragment id << 32 | offset), so a
compaction that moves rows into new fragments leaves every index holding the rewritten
fragments pointing at rows that are gone. pylance's rule (``optimize.rs``,
``DatasetIndexRemapper``): each index whose fragment bitmap meets the rewritten
fragments is written again under a new uuid with its row ids remapped (deleted rows
dropped), and the ``Rewrite`` transaction lists it as a ``RewrittenIndex`` (old id, new
id, details, version, files); committing moves its bitmap from the old fragments to the
new ones. Indices that cannot remap (ZONEMAP, BLOOMFILTER) are left as they were: their
bitmaps keep the old fragment ids, so the new fragments are scanned. With stable row
ids the ids survive and the commit moves the bitmaps, except for the indices that hold
row addresses there: pylance 14's BTREE (index version 1) is remapped all the same,
ZONEMAP and BLOOMFILTER lose the rewritten fragments.

Here:

* :class:`AddressMap`: old row address -> new row address of the moved rows, from each
  rewrite group's old live rows (in order) and its new fragments' rows (in order);
* scalar indices (BTREE, BITMAP, LABEL_LIST, NGRAM) are written again from the column
  over the index's fragments after the rewrite (the untouched ones read from the
  dataset, the new ones from the fragments just written), which holds exactly the
  rows a remap of the old index keeps, at their new addresses;
* vector indices keep their model (centroids, codebook, bounds) and their stored codes:
  only the row ids change and deleted rows drop out (:func:`_remap_vector`).

The code uses the dataset's public API only (``list_indices``, ``scanner``,
``lance_schema``, ``uri``), as the rest of ``lancenb.index``.
"""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import dataclass

import numpy as np

from lancenb.errors import NotSupportedError

__all__ = ["AddressMap", "RemappedIndex", "remap_indices", "unremappable", "REMAP_TYPES",
           "KEPT_TYPES"]

# list_indices types pylance remaps, and those it leaves unremapped (can_remap false)
_SCALAR = {"BTree": "BTREE", "Bitmap": "BITMAP", "LabelList": "LABEL_LIST", "NGram": "NGRAM"}
_VECTOR = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ")
REMAP_TYPES = tuple(_SCALAR) + _VECTOR + ("Inverted", "Json")
KEPT_TYPES = ("ZoneMap", "BloomFilter")
_FRAG_REUSE = "__lance_frag_reuse"


class AddressMap:
    """Where a compaction moved rows: ``old`` (sorted uint64 addresses of the rows
    kept) -> ``new``; rows of ``affected`` fragments not in ``old`` were deleted."""

    def __init__(self, old: np.ndarray, new: np.ndarray, affected):
        order = np.argsort(old, kind="stable")
        self.old = np.asarray(old, np.uint64)[order]
        self.new = np.asarray(new, np.uint64)[order]
        self.affected = np.array(sorted(int(a) for a in affected), np.uint64)

    @classmethod
    def from_groups(cls, groups) -> "AddressMap":
        """``groups``: ``[(old, new)]`` per rewrite group, ``old`` a list of ``(fragment
        id, live offsets)`` (offsets None: every one of ``physical_rows`` rows; given as
        ``(id, offsets, physical_rows)``), ``new`` a list of ``(fragment id,
        physical_rows)``, both in the order rows were written."""
        olds, news, affected = [], [], set()
        for old, new in groups:
            for fid, offs, n in old:
                affected.add(int(fid))
                offs = np.arange(n, dtype=np.uint64) if offs is None else \
                    np.asarray(offs, np.uint64)
                olds.append((np.uint64(fid) << np.uint64(32)) | offs)
            for fid, n in new:
                news.append((np.uint64(fid) << np.uint64(32)) | np.arange(n, dtype=np.uint64))
        old = np.concatenate(olds) if olds else np.zeros(0, np.uint64)
        new = np.concatenate(news) if news else np.zeros(0, np.uint64)
        if len(old) != len(new):
            raise ValueError(f"a compaction wrote {len(new)} rows for {len(old)} live rows")
        return cls(old, new, affected)

    def remap(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(keep, new ids)``: ``keep`` masks the ids still live; ``new ids`` are the
        kept ids at their new addresses (ids outside the rewritten fragments as they
        were)."""
        ids = np.asarray(ids, np.uint64)
        frag = ids >> np.uint64(32)
        moved = np.isin(frag, self.affected)
        pos = np.searchsorted(self.old, ids)
        pos_ok = np.minimum(pos, max(len(self.old) - 1, 0))
        found = (pos < len(self.old)) & (self.old[pos_ok] == ids) if len(self.old) else \
            np.zeros(len(ids), bool)
        keep = ~moved | found
        out = ids.copy()
        hit = moved & found
        out[hit] = self.new[pos_ok[hit]]
        return keep, out[keep]


@dataclass
class RemappedIndex:
    """An index written again for a compaction (pylance's ``RewrittenIndex``)."""
    old_uuid: str
    new_uuid: str
    details_type_url: str
    details: bytes
    index_version: int
    files: list  # [(name, size)]


def unremappable(ds, affected) -> list[dict]:
    """Entries of ``ds.list_indices()`` that cover any of the ``affected`` fragments
    and that lancenb cannot remap (pylance remaps them: e.g. INVERTED)."""
    out = []
    for e in ds.list_indices():
        if e["name"] == _FRAG_REUSE or e["type"] in REMAP_TYPES + KEPT_TYPES:
            continue
        if set(int(f) for f in e["fragment_ids"]) & set(affected):
            out.append(e)
    return out


def remap_indices(ds, amap: AddressMap, new_fragments: list, moved: dict, *,
                  stable: bool = False, versions: dict | None = None) -> list:
    """Write every index of ``ds`` that covers a rewritten fragment again for the
    compaction (see the module docstring); the :class:`RemappedIndex` list to put in
    the ``Rewrite`` transaction. ``new_fragments``: the new fragments' objects (with
    their reserved ids), readable through ``ds``; ``moved``: old fragment id -> the ids
    of its group's new fragments. ``stable``: the dataset has stable row ids (only
    indices of row addresses are rewritten: BTREE of ``versions`` (uuid -> index
    version) 1 or more). Files written are removed if a later index fails."""
    done: list[RemappedIndex] = []
    try:
        for e in ds.list_indices():
            covered = {int(f) for f in e["fragment_ids"]}
            if e["name"] == _FRAG_REUSE or not covered & set(moved):
                continue
            after = {f for f in covered if f not in moved}
            for f in covered & set(moved):
                after.update(moved[f])
            if stable:
                if e["type"] == "BTree" and (versions or {}).get(e["uuid"], 0) >= 1:
                    done.append(_rebuild_scalar(ds, e, after, new_fragments))
            elif e["type"] in _SCALAR:
                done.append(_rebuild_scalar(ds, e, after, new_fragments))
            elif e["type"] == "Json":
                done.append(_rebuild_json(ds, e, after, new_fragments))
            elif e["type"] in _VECTOR:
                done.append(_remap_vector(ds, e, amap, after))
            elif e["type"] == "Inverted":  # (built again over the new row addresses)
                from lancenb.index.fts.build import rebuild_inverted
                from lancenb.index.scalar import api

                frags = [f for f in ds.get_fragments() if f.fragment_id in after] + \
                    [f for f in new_fragments if f.fragment_id in after]
                col = e["fields"][0]
                typ = api.storage_type(api.column_field(ds, col).type)
                uid, url, details, version, written = rebuild_inverted(
                    ds.uri, e["uuid"], api.address_batches(ds, col, frags, typ))
                done.append(RemappedIndex(e["uuid"], uid, url, details, version, written))
            elif e["type"] not in KEPT_TYPES:
                raise NotSupportedError(f"compaction: lancenb cannot remap the {e['type']} "
                                        f"index {e['name']!r} over the rewritten fragments")
    except BaseException:
        remove_written(ds, done)
        raise
    return done


def remove_written(ds, done: list) -> None:
    """Remove the index files of ``done`` (a compaction that did not commit)."""
    from lancenb.index.scalar.common import IndexFiles

    for r in done:
        files = IndexFiles(ds.uri, r.new_uuid)
        for name, _ in r.files:
            try:
                files.store.delete(files.rel(name))
            except Exception:  # noqa: BLE001 - best effort: the compaction failed already
                pass


def _rebuild_scalar(ds, entry: dict, after: set, new_fragments: list) -> RemappedIndex:
    from lancenb.index.scalar import api, bitmap, btree, label_list, ngram
    from lancenb.index.scalar.common import IndexFiles

    kind = _SCALAR[entry["type"]]
    column = entry["fields"][0]
    field = api.column_field(ds, column)
    typ = api.storage_type(field.type)
    frags = [f for f in ds.get_fragments() if f.fragment_id in after] + \
        [f for f in new_fragments if f.fragment_id in after]
    uid = str(uuidlib.uuid4())
    files = IndexFiles(ds.uri, uid)
    # (row addresses: the row ids without stable row ids, and what a BTREE of index
    # version 1 holds with them)
    batches = api.address_batches(ds, column, frags, typ)
    writer = {"BTREE": btree.write_btree, "BITMAP": bitmap.write_bitmap,
              "LABEL_LIST": label_list.write_label_list, "NGRAM": ngram.write_ngram}[kind]
    writer(files, batches, typ)
    _, url, version = api.BUILT_TYPES[kind]
    return RemappedIndex(entry["uuid"], uid, url, b"", version,
                         [(n, int(s)) for n, s in files.written])


def _rebuild_json(ds, entry: dict, after: set, new_fragments: list) -> RemappedIndex:
    """A JSON index written again over ``after``'s rows (their addresses), with its
    path, target type and value type kept."""
    from lancenb.index import json_index as ji
    from lancenb.index.scalar import api, bitmap, btree
    from lancenb.index.scalar.common import IndexFiles
    from lancenb.index.scalar.query import json_targets

    target = json_targets(ds.uri, ds.version, [entry]).get(entry["uuid"])
    if target is None:
        raise NotSupportedError(f"compaction: lancenb cannot remap the JSON index "
                                f"{entry['name']!r} (its target index type)")
    path, tname, typ = target
    column = entry["fields"][0]
    storage = api.storage_type(api.column_field(ds, column).type)
    frags = [f for f in ds.get_fragments() if f.fragment_id in after] + \
        [f for f in new_fragments if f.fragment_id in after]
    batches = ((ji.json_values(ji.as_jsonb(v, column), path, typ), ids)
               for v, ids in api.address_batches(ds, column, frags, storage))
    uid = str(uuidlib.uuid4())
    files = IndexFiles(ds.uri, uid)
    (btree.write_btree if tname == "BTree" else bitmap.write_bitmap)(files, batches, typ)
    url = ji.TARGETS["BTREE" if tname == "BTree" else "BITMAP"][0]
    return RemappedIndex(entry["uuid"], uid, ji.DETAILS_TYPE_URL, ji.encode_details(path, url),
                         0, [(n, int(s)) for n, s in files.written])


def _remap_vector(ds, entry: dict, amap: AddressMap, after: set) -> RemappedIndex:
    from lancenb.index.vector.build import INDEX_VERSION, VECTOR_DETAILS_URL, write_index
    from lancenb.index.vector.ivf import open_vector_index

    idx = open_vector_index(ds, entry)
    st = idx.storage
    n = len(st.row_ids)
    labels = np.zeros(n, np.int32)
    for p, (s, ln) in enumerate(zip(st.offsets, st.lengths)):
        labels[int(s):int(s) + int(ln)] = p
    num_bits = int(st.params.get("nbits", st.params.get("num_bits", 8)))
    m = int(st.params.get("num_sub_vectors", 0))
    if st.kind == "PQ":  # stored sub-vector major per partition: back to row-major
        width = m if num_bits == 8 else m // 2
        flat = np.asarray(st.data, np.uint8).reshape(-1)
        payload = np.empty((n, width), np.uint8)
        for s, ln in zip(st.offsets, st.lengths):
            s, ln = int(s), int(ln)
            payload[s:s + ln] = flat[s * width:(s + ln) * width].reshape(width, ln).T
    else:
        payload = np.asarray(st.data)
    keep, ids = amap.remap(st.row_ids)
    # (the stored metadata only: readers may cache arrays in params, e.g. the codebook)
    params = {k: v for k, v in st.params.items() if k != "codebook"
              and isinstance(v, (int, float, str, bool, list, dict, type(None)))}
    codebook = st.params.get("codebook") if st.kind == "PQ" else None
    field_id = ds.lance_schema.field(idx.column).id()
    built = write_index(ds, field_id, idx.index_type, idx.metric, entry["name"],
                        idx.centroids, idx.loss, ids, labels[keep], payload[keep], params,
                        codebook, num_bits=num_bits, num_sub_vectors=m,
                        fragment_ids=sorted(after))
    return RemappedIndex(entry["uuid"], built.uuid, VECTOR_DETAILS_URL, built.details,
                         INDEX_VERSION, [(n_, int(s)) for n_, s in built.files])
