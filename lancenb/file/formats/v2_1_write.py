"""The 2.1/2.2 backend of :class:`~lancenb.file.LanceFileWriter`: leaf columns of
structural pages.

Each top-level field is one column, or one per leaf when it is nested (a packed
struct and a blob v2 struct are one column). A column buffers arrays until its share
of the writer's budget is full, then its pages are encoded
(:func:`lancenb.encodings.page.encode_page`, blobs out of line first) and written,
64-byte aligned, in column order. Columns are encoded on a thread pool and still
written in the order a sequential write would write them, so files are
byte-identical either way.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import file2_pb2
from lancenb.encodings import blocks, pb
from lancenb.encodings.config import config_for_field, is_blob, is_packed
from lancenb.encodings.page import encode_page
from lancenb.encodings.physical import fsl, packed_struct
from lancenb.encodings.physical import packed_struct_variable as vpacked
from lancenb.encodings.plainpage import encode_plain, encode_plain_many, plain_bits
from lancenb.encodings.structural import blob, dictarray, repdef
from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file.format import PAD_BYTE, PAGE_ALIGN
from lancenb.file.schema import has_map, schema_to_fields, storage_type
from lancenb.file.version import FileVersion
from lancenb.io.pools import ThreadPool, module_lock

__all__ = ["V21Writer", "DEFAULT_COLUMN_BUDGET"]


DEFAULT_COLUMN_BUDGET = 8 * 1024 * 1024  # bytes buffered per column before a page is written
# a flush whose pages hold fewer buffered bytes than this on average encodes them on
# the calling thread: small pages are mostly Python work, which threads only contend for
PARALLEL_MIN_BYTES = 512 * 1024
COALESCE_BYTES = 256 * 1024  # pages up to this size are written with one call
# plain number pages take encode_plain's short path (same bytes); False: the full chain
USE_PLAIN_PAGES = True
PLAIN_PAGE_MAX_BYTES = 1024 * 1024  # columns up to this size are batched (encode_plain_many)
PLAIN_WINDOW_BYTES = 2 * 1024 * 1024  # input bytes of the columns encoded per window
DRAIN_BYTES = 1024 * 1024  # small pages held back are written once they reach this
_PADS = [PAD_BYTE * i for i in range(PAGE_ALIGN)]


class _Column:
    """Buffers one column's arrays until they make a page.

    A nested field has one column per leaf: each buffers the field's top-level arrays
    and cuts out its leaf (values and rep/def levels) when it writes a page.
    """

    def __init__(self, field: pa.Field, config, top: int = 0, path: tuple | None = None,
                 share: int = 1, is_blob_col: bool = False):
        self.field = field
        self.config = config
        self.top = top
        self.path = path
        self.share = share
        self.arrays: list[pa.Array] = []
        self.nbytes = 0
        self.pages: list = []
        self.rows_written = 0
        self.blob = is_blob_col  # values written out of line (:meth:`V21Writer._blob_page`)


def _is_blob_column(col: _Column) -> bool:
    """A blob column: its values are written out of line while its page is encoded."""
    return col.blob or (col.path is None and blob.is_write_v2(col.field))


def _encode_workers() -> int:
    return min(_MAX_ENCODE_WORKERS, os.cpu_count() or 1)


# columns are encoded on this pool (per process, restarted after fork); pages are
# still written in column order by the thread that owns the writer
_MAX_ENCODE_WORKERS = 16
_POOL = ThreadPool(_encode_workers, "lancenb-encode")


def _has_unsupported(dt: pa.DataType) -> bool:
    """Types lancenb cannot write yet: maps, unions, fixed-size lists of anything but
    whole-byte fixed-width primitives."""
    if pa.types.is_struct(dt):
        return any(_packed_unsupported(f) or _has_unsupported(f.type) for f in dt)
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return _packed_unsupported(dt.value_field) or _has_unsupported(dt.value_type)
    if blocks.is_vector(dt):
        return False
    return pa.types.is_nested(dt)


def _packed_unsupported(f: pa.Field) -> bool:
    """A packed struct inside a nested field whose children are not all whole-byte
    fixed-width (pylance packs those only at the top level, and only in 2.2)."""
    return repdef.is_packed_leaf(f) and packed_struct.child_bits(f.type) is None


class _ColumnPlan:
    """What :class:`V21Writer` derives from a schema alone (checked, then shared by
    every writer of that schema: see :func:`_column_plan`): per top-level field whether
    it is a map / a fixed-size list of structs, the schema's field messages, and per
    column ``(field, config, top-level index, leaf path, share, blob)``."""

    __slots__ = ("maps", "items", "fields_pb", "columns")

    def __init__(self, schema: pa.Schema, version: FileVersion, base_config):
        # plain numbers without field metadata skip the checks below (none applies),
        # and share one configuration: wide schemas paid for them field by field
        plain = [not f.metadata and plain_bits(f.type) > 0 for f in schema]
        # maps are encoded as the list<entries: struct<key, value>> they are laid out as
        self.maps = [not p and has_map(f.type) for f, p in zip(schema, plain)]
        # a fixed-size list of structs (2.2) is stored as struct<item: ...> of its items
        self.items = [None if p else fsl.struct_items(f.type) for f, p in zip(schema, plain)]
        store = schema if not any(self.maps) and not any(self.items) else pa.schema(
            [f.with_type(storage_type(f.type)) if m else f.with_type(it[0]) if it else f
             for f, m, it in zip(schema, self.maps, self.items)])
        for f, p in zip(store, plain):
            if p or blob.is_write_v2(f):
                continue
            if is_packed(f):
                if packed_struct.child_bits(f.type) is not None:
                    continue
                if not vpacked.is_variable_struct(f.type):
                    raise NotSupportedError(
                        f"column {f.name!r}: packed structs need whole-byte fixed-width or "
                        f"string/binary children, not {f.type}")
                if version is not FileVersion.V2_2:
                    raise NotSupportedError(
                        f"column {f.name!r}: packed structs with variable-width children "
                        f"need file version 2.2 (pylance refuses them in "
                        f"{version.label} too)")
                continue
            if is_blob(f) and not pa.types.is_large_binary(f.type):
                raise InvalidInputError(
                    f"column {f.name!r}: blob columns must be large_binary, not {f.type}")
            if _has_unsupported(f.type):
                raise NotSupportedError(
                    f"column {f.name!r}: writing {f.type} is not supported yet")
        for f, p in zip(schema, plain):
            if not p:
                dictarray.check_writable(f.type, f.name)
        fields_pb, _ = schema_to_fields(schema)  # checks every type is storable
        self.fields_pb = tuple(fields_pb)  # (shared: read, never changed)
        self.columns = []
        plain_config = None  # (a field without metadata: the writer's configuration)
        for i, (f, p) in enumerate(zip(store, plain)):
            if p:
                if plain_config is None:
                    plain_config = config_for_field(f, base_config)
                self.columns.append((f, plain_config, i, None, 1, False))
                continue
            if not repdef.is_nested(f.type) or is_packed(f) or blob.is_write_v2(f):
                self.columns.append((f, config_for_field(f, base_config), i, None, 1,
                                     bool(f.metadata) and is_blob(f)))
                continue
            paths = repdef.leaf_paths(f.type)
            # as pylance: the top-level field's lance-encoding:* metadata governs
            # every leaf column under it (a child's own metadata is not read)
            config = config_for_field(f, base_config)
            for path in paths:
                leaf = repdef.leaf_arrow_field(f, path)
                leaf_blob = is_blob(leaf)
                if leaf_blob and not pa.types.is_large_binary(leaf.type):
                    raise InvalidInputError(
                        f"column {f.name!r}: blob field {leaf.name!r} must be "
                        f"large_binary, not {leaf.type}")
                self.columns.append((f, config, i, path, len(paths), leaf_blob))


# schema hash -> [(schema, file version, base configuration, plan)]: writers of a schema
# seen before (every append to a dataset, every file of a write) reuse its plan
_PLANS: dict = {}
_PLANS_MAX = 256
_PLANS_LOCK = module_lock(globals(), "_PLANS_LOCK")


def _column_plan(schema: pa.Schema, version: FileVersion, base_config) -> _ColumnPlan:
    """The :class:`_ColumnPlan` of ``schema`` (field metadata included: it carries
    encoding options), memoised per process."""
    key = hash(schema)
    for seen, ver, cfg, plan in _PLANS.get(key, ()):
        if ver is version and cfg == base_config and seen.equals(schema, check_metadata=True):
            return plan
    plan = _ColumnPlan(schema, version, base_config)
    with _PLANS_LOCK:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = [*_PLANS.get(key, ())[-3:], (schema, version, base_config, plan)]
    return plan


class V21Writer:
    """Writes the columns of a 2.1/2.2 file (:class:`lancenb.file.writer.WriterBackend`):
    one column per leaf (a packed or blob v2 struct: one), each buffering arrays
    until ``budget`` bytes make a page."""

    def __init__(self, schema: pa.Schema, version: FileVersion, out, write_buffer,
                 base_config, data_cache_bytes: int | None):
        self.version = version
        self._out = out
        self._write_buffer = write_buffer
        self._base_config = base_config
        plan = _column_plan(schema, version, base_config)
        self._maps, self._items, self.fields_pb = plan.maps, plan.items, plan.fields_pb
        self.columns = [_Column(*spec) for spec in plan.columns]
        budget = (data_cache_bytes / max(1, len(schema))
                  if data_cache_bytes else DEFAULT_COLUMN_BUDGET)
        self._budget = max(1, int(budget))
        self._pending: list = []  # small pages not yet written (see _write_page)
        self._pending_bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer a batch's columns; write the pages of those over budget."""
        full = []
        for col in self.columns:
            arr = batch.column(col.top)
            if self._maps[col.top]:
                arr = arr.view(col.field.type)
            elif self._items[col.top]:
                arr = fsl.to_struct_items(arr, col.field.type)
            if len(arr):
                if col.blob and col.path is None and not blob.is_write_v2(col.field):
                    # values out of line now, as pylance: the page buffers descriptions
                    arr = self._blob_values(arr)
                col.arrays.append(arr)
                col.nbytes += arr.nbytes // col.share
                if col.nbytes >= self._budget:
                    full.append(col)
        if full:
            self._flush_many(full)

    def finish(self) -> None:
        """Write every column's last pages: blob values first, then the pages in
        column order (as pylance lays out a file's last pages: byte-identical files
        for the same single-page data)."""
        staged = {}
        for col in self.columns:
            if col.arrays and _is_blob_column(col):
                staged[id(col)] = [self._encode(col)]
        self._flush_many(self.columns, staged)

    def _flush(self, col: _Column) -> None:
        self._flush_many([col])

    def _flush_many(self, cols: list[_Column], ready: dict | None = None) -> None:
        """Write the pages of ``cols``' buffered arrays, column by column.

        Columns are encoded on the encoder pool (the kernels release the GIL) while
        earlier columns' pages are written, at most ``2 x workers`` pages in flight;
        pages are written in the order one-by-one flushes would write them, so files
        are byte-identical to a sequential write. Blob columns (their values are
        written out of line while encoding) are encoded on this thread in their turn.
        ``ready``: ``id(column)`` -> pages already encoded (written in their turn).
        """
        jobs, sizes = [], []  # (column, arrays or None, pages or None); bytes of arrays
        for col in cols:
            if ready and id(col) in ready:
                jobs.append((col, None, ready[id(col)]))
                sizes.append(0)
            elif col.arrays:
                jobs.append((col, col.arrays, None))
                sizes.append(col.nbytes)  # (the buffered arrays' bytes, / share)
                col.arrays, col.nbytes = [], 0
        # windows of about PLAIN_WINDOW_BYTES of input, so that what is held at once
        # stays bounded: small plain-number pages of a window are encoded together
        start, held = 0, 0
        for i, size in enumerate(sizes):
            held += size
            if held >= PLAIN_WINDOW_BYTES or i == len(jobs) - 1:
                self._run_jobs(self._plain_pages(jobs[start:i + 1], sizes[start:i + 1]))
                start, held = i + 1, 0
        self._drain()

    def _plain_pages(self, jobs: list, sizes: list) -> list:
        """``jobs`` with the pages of their small plain-number columns (``sizes``:
        bytes buffered per job) encoded together (:func:`encode_plain_many`: same
        bytes as one by one)."""
        picked = [i for i, (col, arrays, _) in enumerate(jobs)
                  if USE_PLAIN_PAGES and arrays is not None and col.path is None
                  and not col.blob and sizes[i] <= PLAIN_PAGE_MAX_BYTES
                  and plain_bits(col.field.type)]
        if len(picked) < 2:
            return jobs
        pages = encode_plain_many([dictarray.page_array(jobs[i][1]) for i in picked],
                                  [jobs[i][0].config for i in picked],
                                  version_minor=self.version.footer[1])
        jobs = list(jobs)
        for i, page in zip(picked, pages):
            if page is not None:
                col, arrays, _ = jobs[i]
                rows = len(arrays[0]) if len(arrays) == 1 else sum(len(a) for a in arrays)
                jobs[i] = (col, None, [(*page, rows)])
        return jobs

    def _run_jobs(self, jobs: list) -> None:
        """Encode (where not done) and write the pages of ``jobs`` in order."""
        pooled = [arrays for col, arrays, pages in jobs
                  if arrays is not None and not _is_blob_column(col)]
        # (the worker count, a system call, only for flushes big enough to share out)
        if (len(pooled) < 2 or sum(a.nbytes for arrays in pooled for a in arrays)
                < PARALLEL_MIN_BYTES * len(pooled) or (workers := _encode_workers()) < 2):
            for col, arrays, pages in jobs:
                for page in (pages if arrays is None else self._encode_pages(col, arrays)):
                    self._write_page(col, *page)
            return
        pool = _POOL.get()
        window = 2 * workers
        futures: dict[int, object] = {}
        nxt = 0  # next job to submit

        def fill() -> None:
            nonlocal nxt
            while nxt < len(jobs) and len(futures) < window:
                col, arrays, _ = jobs[nxt]
                if arrays is not None and not _is_blob_column(col):
                    futures[nxt] = pool.submit(self._encode_pages, col, arrays)
                nxt += 1

        try:
            for i, (col, arrays, pages) in enumerate(jobs):
                fill()
                if i in futures:
                    pages = futures.pop(i).result()
                elif arrays is not None:
                    pages = self._encode_pages(col, arrays)
                for page in pages:
                    self._write_page(col, *page)
        finally:
            for f in futures.values():
                f.cancel()

    def _encode_pages(self, col: _Column, arrays: list) -> list:
        """The pages (``(buffers, layout, rows)``) of ``arrays`` of ``col``: one, unless
        their dictionaries overflow (:func:`dictarray.page_groups`)."""
        return [self._encode(col, group) for group in dictarray.page_groups(arrays)]

    def _encode(self, col: _Column, arrays: list | None = None):
        """``(buffers, layout, rows)`` of the page of ``arrays`` (default: ``col``'s
        buffered arrays, taken out of it; blob values are written out of line now)."""
        if arrays is None:
            arrays, col.arrays, col.nbytes = col.arrays, [], 0
        arr = dictarray.page_array(arrays)  # (dictionaries joined as pylance does)
        levels = None
        rows = len(arr)
        if col.path is not None:
            levels, arr = repdef.shred(arr, col.path)
        if col.path is None and blob.is_write_v2(col.field):
            buffers, layout = self._blob_v2_page(arr)
        elif col.blob and col.path is None:  # (values written by _blob_values)
            pos, size = arr.field(0), arr.field(1)
            valid = None if arr.null_count == 0 else np.asarray(arr.is_valid())
            buffers, layout = blob.encode(np.asarray(pos), np.asarray(size), valid,
                                          version_minor=self.version.footer[1])
        elif col.blob:
            buffers, layout = self._blob_page(arr, levels)
        else:
            minor = self.version.footer[1]
            plain = (None if levels is not None or not USE_PLAIN_PAGES
                     else encode_plain(arr, col.config, version_minor=minor))
            buffers, layout = plain or encode_page(arr, version_minor=minor, config=col.config,
                                                   levels=levels)
        return buffers, layout, rows

    def _drain(self) -> None:
        """Write the small pages held back (:meth:`_write_page`) in one call."""
        if self._pending:
            self._out.write(b"".join(self._pending))
            self._pending, self._pending_bytes = [], 0

    def _write_page(self, col: _Column, buffers, layout, rows: int) -> None:
        sizes = [memoryview(b).nbytes for b in buffers]
        if sum(sizes) <= COALESCE_BYTES:
            # small pages (buffers and padding) are held back and go out together, up
            # to DRAIN_BYTES at a time (and at the end of every flush): the same bytes,
            # without write calls per page, per buffer and per padding
            pos = self._out.tell() + self._pending_bytes
            parts, positions = self._pending, []
            for b, n in zip(buffers, sizes):
                pad = (-n) % PAGE_ALIGN
                positions.append((pos, n))
                parts.append(b)
                if pad:
                    parts.append(_PADS[pad])
                pos += n + pad
            self._pending_bytes = pos - self._out.tell()
            if self._pending_bytes >= DRAIN_BYTES:
                self._drain()
        else:
            self._drain()
            positions = [self._write_buffer(b) for b in buffers]
        page = file2_pb2.ColumnMetadata.Page(buffer_offsets=[p for p, _ in positions],
                              buffer_sizes=[s for _, s in positions], length=rows,
                              priority=col.rows_written)
        # (encode_plain's layouts come serialized, one object shared by same-shaped pages)
        page.encoding.direct.encoding = (layout if isinstance(layout, bytes)
                                         else pb.pack_any(layout))
        col.pages.append(page)
        col.rows_written += rows

    def _blob_values(self, arr: pa.Array) -> pa.StructArray:
        """Write a top-level blob column's values out of line now (64-aligned); return
        their ``struct<position, size>`` descriptions (null where the value is), what
        its page is made of (:meth:`_encode`). Buffered values would count against the
        page budget and be held until their page is written."""
        block, validity = blocks.from_arrow(arr)
        region, rel, sizes = blob.out_of_line(block, validity)
        self._drain()
        base = self._out.tell()  # 64-aligned: every buffer is padded
        if len(region):
            self._out.write(region)
        mask = None if validity is None or validity.all() else pa.array(~validity)
        return pa.StructArray.from_arrays(
            [pa.array((base + rel).astype(np.uint64)), pa.array(sizes.astype(np.uint64))],
            ["position", "size"], mask=mask)

    def _blob_page(self, arr: pa.Array, levels=None):
        """Write a blob column's values out of line now; the page holds descriptors
        (``levels``: a blob inside structs, one definition level per row)."""
        block, validity = blocks.from_arrow(arr)
        if levels is not None and levels.defs is not None:
            validity = levels.defs[:levels.num_levels] == 0
        region, rel, sizes = blob.out_of_line(block, validity)
        self._drain()
        base = self._out.tell()  # 64-aligned: every buffer is padded
        if len(region):
            self._out.write(region)
        return blob.encode(base + rel, sizes, validity, version_minor=self.version.footer[1],
                           levels=levels)

    def _blob_v2_page(self, arr: pa.StructArray):
        """Write a blob v2 column's inline values out of line now (64-aligned, as
        blob v1 values); the page holds the descriptions (:func:`blob.encode_v2`)."""
        valid = np.ones(len(arr), bool) if arr.null_count == 0 else np.asarray(arr.is_valid())
        kind, data, position, size, blob_id, uri = arr.flatten()
        kind = np.asarray(kind.fill_null(0), np.uint8)
        inline = valid & (kind == 0)
        block, _ = blocks.from_arrow(data)
        region, rel, sizes = blob.out_of_line(block, inline)
        self._drain()
        base = self._out.tell()  # 64-aligned: every buffer is padded
        if len(region):
            self._out.write(region)
        pos = np.where(inline, base + rel, np.asarray(position.fill_null(0), np.uint64))
        size = np.where(inline, sizes, np.asarray(size.fill_null(0), np.uint64))
        bid = np.where(inline, 0, np.asarray(blob_id.fill_null(0), np.uint32))
        uri = pc.if_else(pa.array(inline), "", uri.fill_null(""))
        mask = None if valid.all() else pa.array(~valid)
        desc = pa.StructArray.from_arrays(
            [pa.array(kind, pa.uint8()), pa.array(pos.astype(np.uint64), pa.uint64()),
             pa.array(size.astype(np.uint64), pa.uint64()),
             pa.array(bid.astype(np.uint32), pa.uint32()), uri.cast(pa.string())],
            fields=list(blob.DESCRIPTION_V2), mask=mask)
        return blob.encode_v2(desc)

