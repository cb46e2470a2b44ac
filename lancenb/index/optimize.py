"""``optimize_indices`` for scalar and full-text indices: bring appended fragments into
BTREE, BITMAP, LABEL_LIST, NGRAM, ZONEMAP, BLOOMFILTER, INVERTED and JSON indices (the
vector indices' counterpart is :mod:`lancenb.index.vector.optimize`; this module sits
beside the scalar and fts packages, as it uses both).

What pylance 14 does, per index name (found by experiment; its segments in manifest
order, the *unindexed* fragments being the live ones no segment of the name covers):

* ``num_indices_to_merge=0``: a *delta* segment (a new uuid under the same name)
  over the unindexed fragments, ``dataset_version`` the version optimized; the old
  segments stay. Nothing happens when every fragment is indexed.
* ``num_indices_to_merge=n`` (default 1; ``retrain=True`` does the same for scalar
  indices): the last ``n`` segments and the unindexed fragments become one segment
  covering their fragments that still exist; the segments before them stay. Nothing
  happens when there is nothing unindexed and at most one segment would be merged.
  The merged segment's ``dataset_version`` is that of the first merged segment that
  still covers a live fragment (for INVERTED: the first merged segment); the version
  optimized when none does, and for
  LABEL_LIST, ZONEMAP and BLOOMFILTER merging two or more such segments.
* The index version and details are those of the type (the build parameters of the
  newest merged segment: zone sizes, bloom filter sizing, tokenizer, JSON path).

The indices that change are one CreateIndex commit, as pylance's (the segments that
stay are listed again, since a CreateIndex replaces every segment of a name it names).

lancenb writes the new segment from the column over its fragments (deleted rows
skipped), with the same builders as ``create_scalar_index``; pylance merges the old
segments' content with the new rows instead, keeping rows deleted since (queries drop
them either way, so the answers are the same).

The code uses the dataset's public API only (``list_indices``, ``get_fragments``,
``scanner``, ``lance_schema``, ``uri``, ``version``, ``type(ds).commit``).
"""

from __future__ import annotations

import itertools
import json
import uuid as uuidlib
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.index.scalar import (
    api,
    bitmap,
    btree,
    label_list,
    ngram,
    rowmap,
    segments,
    zones,
)
from lancenb.index.scalar.common import IndexFiles, become, sort_order
from lancenb.io.store import ObjectStore
from lancenb.table.commit import find_manifest
from lancenb.table.indices import CreateIndex, Index, IndexFile, index_from_pb, parse_section

__all__ = ["optimize_scalar_indices", "OPTIMIZE_TYPES"]

# list_indices type -> create_scalar_index type
OPTIMIZE_TYPES = {"BTree": "BTREE", "Bitmap": "BITMAP", "LabelList": "LABEL_LIST",
                  "NGram": "NGRAM", "ZoneMap": "ZONEMAP", "BloomFilter": "BLOOMFILTER",
                  "Inverted": "INVERTED", "Json": "JSON"}
# types whose merge of several segments is stamped with the version optimized
_RESTAMPED = ("LabelList", "ZoneMap", "BloomFilter")
_SYSTEM = ("__lance_frag_reuse", "__lance_mem_wal")


def optimize_scalar_indices(ds, *, num_indices_to_merge: int | None = None,
                            index_names=None, retrain: bool = False, **_ignored) -> None:
    """Add unindexed fragments to ``ds``'s scalar and full-text indices (see the module
    docstring); ``ds`` moves to the version committed last.

    Examples
    --------
    >>> optimize_scalar_indices(ds, num_indices_to_merge=0)  # doctest: +SKIP
    """
    entries = ds.list_indices()
    names = list(dict.fromkeys(e["name"] for e in entries if e["type"] in OPTIMIZE_TYPES
                               and e["name"] not in _SYSTEM))
    if index_names is not None:
        wanted = set(index_names)
        names = [n for n in names if n in wanted]
    n_merge = 1 if num_indices_to_merge is None or retrain else int(num_indices_to_merge)
    if n_merge < 0:
        raise InvalidInputError(f"num_indices_to_merge must be >= 0, got {n_merge}")
    meta = _manifest_entries(ds) if names else {}
    new, gone = [], []
    for name in names:
        segs = [e for e in entries if e["name"] == name]
        got = _optimize_one(ds, name, segs, n_merge, meta) if segs else None
        if got is not None:
            new.extend(got[0])
            gone.extend(got[1])
    if new:
        out = type(ds).commit(ds.uri, CreateIndex(new_indices=new, removed_indices=gone),
                              read_version=ds.version)
        become(ds, out)


def _manifest_entries(ds) -> dict:
    """uuid -> :class:`Index` of the index segments of ``ds``'s version, as its manifest
    holds them (details, index version and files, which ``list_indices`` omits)."""
    opts = getattr(ds, "initial_storage_options", None)
    opts = opts() if callable(opts) else opts
    found = find_manifest(ObjectStore(ds.uri, opts), ds.version)
    if found is None:
        raise NotSupportedError(f"optimize_indices: the manifest of version {ds.version} "
                                f"cannot be read by name")
    mf = found[0]
    return {i.uuid: i for i in (index_from_pb(m)
                                for m in parse_section(mf.index_section_bytes(), mf.name))}


def _optimize_one(ds, name: str, segs: list, n_merge: int, meta: dict):
    """The segments of index ``name`` to commit (those that stay, then the new one) and
    those to remove, or None when it needs nothing."""
    live = ds.get_fragments()
    live_ids = {f.fragment_id for f in live}
    covered = {int(f) for e in segs for f in e["fragment_ids"]}
    unindexed = [f for f in live if f.fragment_id not in covered]
    removed = [] if n_merge == 0 else segs[-n_merge:]
    if not unindexed and len(removed) <= 1:
        return
    kept = segs[:len(segs) - len(removed)]
    frag_ids = {f.fragment_id for f in unindexed}
    for e in removed:
        frag_ids |= {int(f) for f in e["fragment_ids"]} & live_ids
    frags = [f for f in live if f.fragment_id in frag_ids]
    model = meta[(removed or segs)[-1]["uuid"]]  # (the parameters come from the newest)
    kind = segs[-1]["type"]
    holding = [e for e in removed if kind == "Inverted"  # (its old partitions stay)
               or {int(f) for f in e["fragment_ids"]} & live_ids]
    if holding and (len(holding) < 2 or kind not in _RESTAMPED):
        version = int(holding[0]["version"])
    else:
        version = int(ds.version)
    # (BTREE and BITMAP keep what the merged segments hold, as pylance: their rows of
    # live fragments, deleted ones too, plus the unindexed fragments' rows)
    keep = removed if kind in ("BTree", "Bitmap") and \
        not getattr(ds, "has_stable_row_ids", False) else []
    new_frags = unindexed if keep else frags
    column = segs[-1]["fields"][0]
    olds = [meta[e["uuid"]] for e in removed]
    built = None
    if kind in ("ZoneMap", "BloomFilter") and olds and _disjoint(olds):
        built = _merge_zones(ds, kind, column, model, olds, unindexed)
    elif kind == "Inverted" and olds and all(
            {int(f) for f in o.fragment_ids} <= live_ids for o in olds):
        built = _merge_inverted(ds, column, model, olds, unindexed)
    elif kind == "Bitmap" and keep and all(
            {int(f) for f in o.fragment_ids} <= live_ids for o in olds):
        built = _merge_bitmaps(ds, column, model, olds, unindexed, live)
    if built is None:
        built = _build(ds, kind, column, model, new_frags,
                       _held_rows(ds, kind, keep, live) if keep else None)
    uid, files, details, index_version = built
    new = Index(uuid=uid, name=name, fields=list(model.fields), dataset_version=version,
                fragment_ids=frag_ids, index_version=index_version,
                created_at=datetime.now(timezone.utc),
                files=[IndexFile(n, s) for n, s in files], index_details=details)
    return [*(meta[e["uuid"]] for e in kept), new], [meta[e["uuid"]] for e in removed]


def _disjoint(olds: list) -> bool:
    seen: set = set()
    for i in olds:
        got = {int(f) for f in i.fragment_ids}
        if got & seen:
            return False
        seen |= got
    return True


def _merge_zones(ds, kind: str, column: str, model: Index, olds: list, unindexed: list):
    """The zones of the ZONEMAP or BLOOMFILTER segments ``olds`` as they are (those of
    fragments deleted since too, as pylance keeps them) and the zones of the
    ``unindexed`` fragments, in one new segment (:func:`.segments.merge_segments`)."""
    parts, temp = list(olds), None
    if unindexed:
        uid, written, details, version = _build(ds, kind, column, model, unindexed)
        temp = segments.replace_fields(
            model, uuid=uid, fragment_ids={f.fragment_id for f in unindexed},
            index_version=version, index_details=details,
            files=[IndexFile(n, sz) for n, sz in written])
        parts.append(temp)
    try:
        merged = segments.merge_segments(ds, parts)
    finally:
        if temp is not None:  # (the new fragments' zones: merged, or of no use)
            files = IndexFiles(ds.uri, str(temp.uuid))
            files.written = [(f.path, f.size_bytes) for f in temp.files]
            _remove(files)
    return str(merged.uuid), [(f.path, int(f.size_bytes)) for f in merged.files], \
        model.index_details, api.BUILT_TYPES[OPTIMIZE_TYPES[kind]][2]


def _inverted_meta(files: IndexFiles) -> tuple[dict, list, pa.Table] | None:
    """``(schema metadata but the partition list, partition ids, rows)`` of an
    INVERTED index's ``metadata.lance`` (None: the legacy layout without it)."""
    if not files.exists("metadata.lance"):
        return None
    r = files.reader("metadata.lance")
    meta = {k.decode(): v.decode() for k, v in (r.schema_full.metadata or {}).items()}
    parts = json.loads(meta.pop("partitions", "[]"))
    return meta, [int(p) for p in parts], r.read_all().to_table()


def _copy_partition(src: IndexFiles, pid: int, dst: IndexFiles, to: int) -> None:
    for kind in ("tokens", "invert", "docs"):
        data = src.store.read_bytes(src.rel(f"part_{pid}_{kind}.lance"))
        name = f"part_{to}_{kind}.lance"
        dst.store.write_bytes(dst.rel(name), data)
        dst.written.append((name, len(data)))


def _merge_inverted(ds, column: str, model: Index, olds: list, unindexed: list):
    """The partitions of the INVERTED segments ``olds`` (over live fragments only),
    copied as they are (documents deleted since too, as pylance keeps them for its
    BM25 statistics), and a partition of the ``unindexed`` fragments, in one new
    segment; None when their layouts differ (the caller builds it from the column)."""
    from lancenb.index.fts import build as fts_build
    from lancenb.index.fts import format as fts_format

    old_files = [IndexFiles(ds.uri, str(o.uuid)) for o in olds]
    metas = [_inverted_meta(f) for f in old_files]
    if any(m is None or m[0] != metas[0][0] for m in metas):
        return None
    params = fts_format.read_metadata(old_files[-1])[0]
    sources = [(f, pid) for f, m in zip(old_files, metas) for pid in m[1]]
    scratch = None
    if unindexed:
        typ = api.storage_type(api.column_field(ds, column).type)
        scratch = IndexFiles(ds.uri, str(uuidlib.uuid4()))
        fts_build.write_inverted(scratch, params, _row_batches(ds, column, unindexed, typ,
                                                               "_rowid"))
        fresh = _inverted_meta(scratch)
        if fresh is None or fresh[0] != metas[0][0]:  # (written in another layout)
            _remove(scratch)
            return None
        sources += [(scratch, pid) for pid in fresh[1]]
    uid = str(uuidlib.uuid4())
    files = IndexFiles(ds.uri, uid)
    try:
        for to, (src, pid) in enumerate(sources):
            _copy_partition(src, pid, files, to)
        meta, _, table = metas[0]
        meta = dict(meta, partitions=json.dumps(list(range(len(sources)))))
        files.write("metadata.lance", table, table.schema.with_metadata(meta))
    finally:
        if scratch is not None:
            _remove(scratch)
    return uid, files.written, model.index_details or (
        fts_build.DETAILS_TYPE_URL, fts_build.details_bytes(params)), int(model.index_version)


def _remove(files: IndexFiles) -> None:
    """Remove the files of a scratch index directory."""
    for name, _ in files.written:
        files.store.delete(files.rel(name))


def _same_as_next(keys: pa.Array) -> np.ndarray:
    """Whether each sorted key equals the next one (null = null, NaN = NaN)."""
    a, b = keys.slice(0, len(keys) - 1), keys.slice(1)
    same = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
    same |= (a.is_null().to_numpy(zero_copy_only=False)
             & b.is_null().to_numpy(zero_copy_only=False))
    if pa.types.is_floating(keys.type):
        same |= (pc.fill_null(pc.is_nan(a), False).to_numpy(zero_copy_only=False)
                 & pc.fill_null(pc.is_nan(b), False).to_numpy(zero_copy_only=False))
    return np.asarray(same, bool)


def _merge_bitmaps(ds, column: str, model: Index, olds: list, unindexed: list, live: list):
    """The BITMAP segments ``olds`` (over live fragments only) and a BITMAP of the
    ``unindexed`` fragments united key by key, as pylance's update: a key's row set is
    copied when one segment has it, united when several do."""
    typ = api.storage_type(api.column_field(ds, column).type)
    rows = {f.fragment_id: int(f.physical_rows) for f in live}
    sources = [IndexFiles(ds.uri, str(o.uuid)) for o in olds]
    scratch = None
    if unindexed:
        scratch = IndexFiles(ds.uri, str(uuidlib.uuid4()))
        bitmap.write_bitmap(scratch, _row_batches(ds, column, unindexed, typ, "_rowid"), typ)
        sources.append(scratch)
    try:
        tables = [f.reader(bitmap.BITMAP_FILE).read_all().to_table() for f in sources]
    finally:
        if scratch is not None:
            _remove(scratch)
    keys = pa.concat_arrays([t.column("keys").combine_chunks().cast(typ) for t in tables])
    raw = pa.concat_arrays([t.column("bitmaps").combine_chunks() for t in tables])
    order = pa.array(sort_order(keys))
    keys, raw = keys.take(order), raw.take(order)
    first = np.r_[True, ~_same_as_next(keys)] if len(keys) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], len(keys)]
    out = raw.to_pylist()
    merged = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        if b - a == 1:
            merged.append(out[a])
            continue
        rs = BitMap64()
        for i in range(a, b):
            rs |= rowmap.deserialize(out[i], full_rows=lambda fid: rows.get(int(fid), 0),
                                     where=f"index {model.uuid} key {i}")
        merged.append(rowmap.serialize(rowmap.to_ids(rs)))
    uid = str(uuidlib.uuid4())
    files = IndexFiles(ds.uri, uid)
    meta = {bitmap.STATS_KEY: json.dumps({"num_bitmaps": len(starts)}, separators=(",", ":"))}
    schema = pa.schema([pa.field("keys", typ), pa.field("bitmaps", pa.binary())],
                       metadata=meta)
    files.write(bitmap.BITMAP_FILE, pa.table([keys.take(pa.array(starts)),
                                              pa.array(merged, pa.binary())], schema=schema),
                schema)
    return uid, files.written, model.index_details or ("", b""), \
        api.BUILT_TYPES["BITMAP"][2]


def _held_rows(ds, kind: str, segs: list, live: list):
    """``(values, uint64 row addresses)`` batches of what the BTREE or BITMAP segments
    ``segs`` hold in the ``live`` fragments (a dataset without stable row ids: the
    ids are addresses, ``fragment << 32 | offset``)."""
    rows = {f.fragment_id: int(f.physical_rows) for f in live}
    live_ids = np.fromiter(rows, np.uint64, len(rows))
    parts = [IndexFiles(ds.uri, e["uuid"]) for e in segs]
    if kind == "BTree":
        source = (b for f in parts for b in _btree_pages(f))
    else:
        source = (b for f in parts for b in _bitmap_batches(f, rows))
    for values, ids in source:
        mask = np.isin(ids >> np.uint64(32), live_ids)
        if mask.all():
            yield values, ids
        elif mask.any():
            yield values.filter(pa.array(mask)), ids[mask]


def _btree_pages(files: IndexFiles, step: int = 1 << 16):
    """``(values, ids)`` of a BTREE segment's sorted pages, ``step`` rows at a time."""
    r = files.reader(btree.PAGES_FILE)
    n = r.num_rows()
    for a in range(0, n, step):
        t = btree.read_rows(r, a, min(step, n - a))
        yield t.column("values").combine_chunks(), \
            np.asarray(t.column("ids").to_numpy(), np.uint64)


def _row_batches(ds, column: str, frags: list, typ: pa.DataType, key: str):
    """``(values cast to typ, uint64 key)`` of ``column`` over ``frags`` (deleted rows
    skipped); ``key`` is ``_rowid`` or ``_rowaddr``, as ``create_scalar_index`` takes
    them for the index type."""
    if key == "_rowaddr":
        yield from api.address_batches(ds, column, frags, typ)
        return
    if not frags:
        return
    for b in ds.scanner(columns=[column], with_row_id=True, fragments=frags).to_batches():
        if b.num_rows:
            v = b.column(0)
            v = v.storage if isinstance(v, pa.ExtensionArray) else v
            yield (v.cast(typ) if v.type != typ else v), \
                np.asarray(b.column(b.schema.get_field_index(key)).to_numpy(), np.uint64)


def _bitmap_batches(files: IndexFiles, rows: dict, step: int = 1024):
    """``(values, ids)`` of a BITMAP segment, ``step`` keys at a time (``rows``:
    fragment id -> physical rows, for row sets that store a fragment whole)."""
    r = files.reader(bitmap.BITMAP_FILE)
    n = r.num_rows()
    for a in range(0, n, step):
        t = r.read_range(a, min(step, n - a)).to_table()
        ids = [rowmap.to_ids(rowmap.deserialize(
            raw, full_rows=lambda fid: rows.get(int(fid), 0),
            where=f"index {files.uuid} key {a + k}"))
            for k, raw in enumerate(t.column("bitmaps").to_pylist())]
        counts = np.array([len(x) for x in ids], np.int64)
        if counts.sum():
            at = pa.array(np.repeat(np.arange(len(ids)), counts))
            yield t.column("keys").combine_chunks().take(at), np.concatenate(ids)


def _build(ds, kind: str, column: str, model: Index, frags: list, held=None):
    """A new segment of the ``kind`` index (a list_indices type) on ``column`` over
    ``frags`` (and the ``(values, ids)`` batches ``held``, kept from merged
    segments), with the parameters of segment ``model``: ``(uuid, [(file, size)],
    (details type URL, details), index version)``."""
    typ = api.storage_type(api.column_field(ds, column).type)
    uid = str(uuidlib.uuid4())
    files = IndexFiles(ds.uri, uid)
    old = IndexFiles(ds.uri, str(model.uuid))
    details = model.index_details or ("", b"")
    create = OPTIMIZE_TYPES[kind]
    if kind == "Json":
        _build_json(ds, column, model, frags, files)
        return uid, files.written, details, int(model.index_version)
    index_version = api.BUILT_TYPES[create][2]
    batches = _row_batches(ds, column, frags, typ, "_rowaddr" if kind in (
        "ZoneMap", "BloomFilter") else "_rowid")
    if held is not None:
        batches = itertools.chain(((v.cast(typ) if v.type != typ else v, ids)
                                   for v, ids in held), batches)
    if kind == "BTree":
        btree.write_btree(files, batches, typ)
    elif kind == "Bitmap":
        bitmap.write_bitmap(files, batches, typ)
    elif kind == "LabelList":
        label_list.write_label_list(files, batches, typ)
    elif kind == "NGram":
        ngram.write_ngram(files, batches, typ)
    elif kind == "ZoneMap":
        meta = old.reader(zones.ZONEMAP_FILE).schema_full.metadata or {}
        zones.write_zonemap(files, batches, typ, rows_per_zone=int(
            meta.get(b"rows_per_zone", zones.ROWS_PER_ZONE)))
    elif kind == "BloomFilter":
        meta = old.reader(zones.BLOOM_FILE).schema_full.metadata or {}
        zones.write_bloomfilter(
            files, batches, typ,
            number_of_items=int(meta.get(b"bloomfilter_item", zones.BLOOM_ITEMS)),
            probability=float(meta.get(b"bloomfilter_probability", zones.BLOOM_PROBABILITY)))
    else:  # Inverted
        from lancenb.index.fts import build as fts_build
        from lancenb.index.fts import format as fts_format

        params = fts_format.read_metadata(old)[0] if old.exists("metadata.lance") else \
            fts_format.read_legacy(old)[0]
        fts_build.write_inverted(files, params, batches)
        details = (fts_build.DETAILS_TYPE_URL, fts_build.details_bytes(params))
    if kind != "Inverted":
        details = (details[0] or api.BUILT_TYPES[create][1], details[1])
    return uid, files.written, details, index_version


def _build_json(ds, column: str, model: Index, frags: list, files: IndexFiles) -> None:
    """A JSON index segment over ``frags`` with ``model``'s path, target and value type."""
    from lancenb.index import json_index as ji
    from lancenb.index.scalar.query import json_targets

    entry = {"uuid": str(model.uuid), "type": "Json"}
    target = json_targets(ds.uri, ds.version, [entry]).get(str(model.uuid))
    if target is None:
        raise NotSupportedError(f"optimize_indices: lancenb cannot read the JSON index "
                                f"{model.name!r} (its target index type)")
    path, tname, typ = target
    storage = api.storage_type(api.column_field(ds, column).type)
    batches = ((ji.json_values(ji.as_jsonb(v, column), path, typ), ids)
               for v, ids in _row_batches(ds, column, frags, storage, "_rowid"))
    (btree.write_btree if tname == "BTree" else bitmap.write_bitmap)(files, batches, typ)
