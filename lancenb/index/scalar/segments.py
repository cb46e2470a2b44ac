"""Distributed building (pylance 14): index segments built over some fragments each
(``create_index_uncommitted``), merged (``merge_existing_index_segments``) and
published together (``commit_existing_index_segments``).

A segment is an ordinary index directory ``_indices/<uuid>/`` plus its ``Index``
metadata; a published index of several segments is several manifest entries of one
name, each covering its own fragments (queries read them all). Merging writes a new
segment: BTREE re-sorts the segments' sorted pages into one, ZONEMAP and BLOOMFILTER
concatenate their zone rows and unite their ``null_bitmap`` row sets.
"""

from __future__ import annotations

import uuid as uuidlib
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.index.scalar import btree, rowmap, zones
from lancenb.index.scalar.common import IndexFiles
from lancenb.table.indices import Index, IndexFile

__all__ = ["merge_segments", "replace_fields"]

_FIELDS = ("uuid", "name", "fields", "dataset_version", "fragment_ids", "index_version",
           "created_at", "base_id", "files", "index_details")


def replace_fields(seg, **changes) -> Index:
    """A lancenb ``Index`` of segment ``seg`` (lancenb's or pylance's) with ``changes``."""
    values = {k: getattr(seg, k, None) for k in _FIELDS}
    values.update(changes)
    values["fragment_ids"] = {int(f) for f in values["fragment_ids"] or ()}
    if values["files"] is not None:
        values["files"] = [IndexFile(f.path, f.size_bytes) if not isinstance(f, IndexFile)
                           else f for f in values["files"]]
    return Index(**values)


def _details(seg) -> str:
    d = getattr(seg, "index_details", None)
    return d[0] if d else ""


def _btree_batches(files: list[IndexFiles]):
    for f in files:
        r = f.reader(btree.PAGES_FILE)
        n = r.num_rows()
        step = 1 << 16
        for a in range(0, n, step):
            t = btree.read_rows(r, a, min(step, n - a))
            yield t.column("values").combine_chunks(), \
                np.asarray(t.column("ids").to_numpy(), np.uint64)


def _zone_tables(files: list[IndexFiles], name: str):
    tables, nulls, meta = [], [], None
    for f in files:
        r = f.reader(name)
        tables.append(r.read_all().to_table())
        m = dict(r.schema_full.metadata or {})
        key = m.pop(b"null_bitmap", None)
        meta = meta or m
        if key is not None:
            nulls.append(rowmap.to_ids(rowmap.deserialize(r.read_global_buffer(int(key)),
                                                          where=f"{name} null_bitmap")))
    table = pa.concat_tables(tables)
    schema = table.schema.with_metadata({k.decode(): v.decode() for k, v in meta.items()})
    ids = np.concatenate(nulls) if nulls else np.zeros(0, np.uint64)
    return table.cast(schema), schema, rowmap.serialize(ids)


def merge_segments(ds, segments: list) -> Index:
    """One new segment holding what ``segments`` (uncommitted, of one index type and
    column) hold; returns its ``Index``."""
    if not segments:
        raise InvalidInputError("merge_existing_index_segments needs at least one segment")
    url = _details(segments[0])
    if any(_details(s) != url for s in segments) or \
            any(list(s.fields) != list(segments[0].fields) for s in segments):
        raise InvalidInputError("segments to merge must be of one index type and column")
    covered: set[int] = set()
    for s in segments:
        got = {int(f) for f in s.fragment_ids}
        if got & covered:
            raise InvalidInputError(f"segments to merge overlap on fragments "
                                    f"{sorted(got & covered)}")
        covered |= got
    parts = [IndexFiles(ds.uri, str(s.uuid)) for s in segments]
    out = IndexFiles(ds.uri, str(uuidlib.uuid4()))
    if url == btree.DETAILS_TYPE_URL:
        vtype = parts[0].reader(btree.PAGES_FILE).schema_full.field("values").type
        btree.write_btree(out, _btree_batches(parts), vtype)
    elif url in (zones.ZONEMAP_DETAILS, zones.BLOOM_DETAILS):
        name = zones.ZONEMAP_FILE if url == zones.ZONEMAP_DETAILS else zones.BLOOM_FILE
        table, schema, nulls = _zone_tables(parts, name)
        out.write(name, table, schema, buffers={"null_bitmap": nulls})
    else:
        raise NotSupportedError(f"lancenb merges BTREE, ZONEMAP and BLOOMFILTER segments, "
                                f"not {url or 'unknown'}")
    first = segments[0]
    return replace_fields(first, uuid=out.uuid, fragment_ids=covered,
                          dataset_version=max(int(s.dataset_version) for s in segments),
                          index_version=max(int(s.index_version) for s in segments),
                          created_at=datetime.now(timezone.utc),
                          files=[IndexFile(n, sz) for n, sz in out.written])


