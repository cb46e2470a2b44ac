"""The default strategy's page for a column of plain numbers, with little Python per page.

A writer of many narrow columns (2,000 float64 columns of 2,000 rows: issue 21) spent
about half a millisecond of Python on each page walking the general chain of
:func:`lancenb.encodings.strategy.encode_page` (statistics objects, codec objects, a
protobuf built and serialized per page). For the commonest page, numbers without
nulls under the default configuration, :func:`encode_plain` takes the same decisions
with the same kernels and frames the chunks as :mod:`.structural.miniblock` does,
returning the same bytes; whatever does not depend on the values (chunk bounds, the
serialized ``PageLayout``, a Flat page's framing) is computed once per shape.

It answers only when the chain ends in Flat or InlineBitpacking without a dictionary;
a page where RLE would be planned (its size floor below the best of the two), a
dictionary taken, or of another type or configuration gets None, and the caller runs
the full chain.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.physical import bitpacking, flat
from lancenb.encodings.physical import dictionary as dictionary_enc
from lancenb.encodings.structural import miniblock
from lancenb.kernels import bitpack as kb
from lancenb.kernels import miniblock as km
from lancenb.kernels import stats as kstats
from lancenb.kernels import stats_rows as kstats_rows

__all__ = ["encode_plain", "encode_plain_many", "plain_bits"]

_DEFAULT = EncodingConfig()
# a group's fixed cost (some 20 NumPy calls) pays from about this many same-shaped
# pages on, and only while they are short: two 10-row pages took ~64 us together,
# ~19 us one by one; six 64 Ki-row pages ~7.4 ms together, ~2.6 ms one by one
GROUP_MIN_PAGES = 4
GROUP_MAX_ROWS = 8192
_BITS: dict = {}  # Arrow type -> bits of a plain number type, or 0
_SHAPES: dict = {}  # (kind, bits, rows, version_minor) -> _Shape


def plain_bits(dtype: pa.DataType) -> int:
    """Bits of a value of ``dtype`` when :func:`encode_plain` can take it (integers,
    floats, dates, times, timestamps, durations of 8 to 64 bits), else 0."""
    bits = _BITS.get(dtype)
    if bits is None:
        t = pa.types
        ok = (t.is_integer(dtype) or t.is_floating(dtype) or t.is_timestamp(dtype)
              or t.is_date(dtype) or t.is_time(dtype) or t.is_duration(dtype))
        bits = dtype.bit_width if ok and dtype.bit_width in (8, 16, 32, 64) else 0
        _BITS[dtype] = bits
    return bits


def _applies(cfg: EncodingConfig) -> bool:
    """The configuration leaves every choice :func:`encode_plain` makes to the defaults
    (thresholds may differ: they are read from ``cfg``)."""
    return (cfg.compression is None and cfg.structural_encoding is None
            and cfg.profile == _DEFAULT.profile)


class _Shape:
    """What a page's framing needs that depends only on its kind, type and rows."""

    def __init__(self, kind: str, bits: int, rows: int, version_minor: int):
        large = version_minor >= 2
        self.size_width = 4 if large else 2
        block = FixedWidth(bits, np.zeros(0, np.uint8), rows)
        self.bounds = (flat.plan(block) if kind == "flat" else bitpacking.plan(block))
        counts = np.diff(self.bounds)
        nc = len(counts)
        self.counts = counts
        self.log2 = np.zeros(nc, np.int64)
        if nc > 1:
            self.log2[:-1] = np.log2(counts[:-1]).astype(np.int64)
        self.zero_levels = np.zeros(nc, np.int64)
        self.meta_dtype = np.uint32 if large else np.uint16
        self.limit = miniblock.MAX_LARGE_CHUNK_BYTES if large else miniblock.MAX_CHUNK_BYTES
        desc = (flat.description(block) if kind == "flat"
                else bitpacking.description(block))
        layout = pb.e21.MiniBlockLayout(value_compression=desc, num_buffers=1, num_items=rows)
        layout.layers.append(pb.e21.RepDefLayer.REPDEF_ALL_VALID_ITEM)
        if large:
            layout.has_large_chunk = True
        self.layout = pb.pack_any(pb.e21.PageLayout(mini_block_layout=layout))
        if kind == "flat":  # the framing does not depend on the values
            self.starts = (self.bounds[:-1] * bits // 8).reshape(-1, 1)
            self.sizes = ((counts * bits + 7) // 8).reshape(-1, 1)
            self.frame = self._frame(self.sizes)

    def _frame(self, sizes: np.ndarray):
        """``(chunk starts in the data buffer, data bytes, metadata buffer)``, or None
        when a chunk exceeds the limit (the full chain then raises)."""
        cbytes = km.chunk_bytes(sizes, 0, self.size_width)
        if len(cbytes) and int(cbytes.max()) > self.limit:
            return None
        out_starts = np.zeros(len(cbytes), np.int64)
        np.cumsum(cbytes[:-1], out=out_starts[1:])
        words = ((cbytes // 8 - 1) << 4) | self.log2
        return out_starts, int(cbytes.sum()), words.astype(self.meta_dtype).view(np.uint8)


def _shape(kind: str, bits: int, rows: int, version_minor: int) -> _Shape:
    key = (kind, bits, rows, version_minor)
    shape = _SHAPES.get(key)
    if shape is None:
        if len(_SHAPES) > 4096:
            _SHAPES.clear()
        shape = _SHAPES[key] = _Shape(kind, bits, rows, version_minor)
    return shape


def encode_plain(arr: pa.Array, cfg: EncodingConfig, *, version_minor: int):
    """``(buffers, serialized Any-wrapped PageLayout)`` of the page of ``arr``, the same
    bytes :func:`lancenb.encodings.strategy.encode_page` gives, or None when ``arr`` is
    not a plain page (see the module docstring) and the full chain must run."""
    bits = plain_bits(arr.type)
    n = len(arr)
    if not bits or not n or arr.null_count or not _applies(cfg):
        return None
    w = bits // 8
    data = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * w:(arr.offset + n) * w]
    block = FixedWidth(bits, data, n)
    values = bitpacking.as_unsigned(block)
    words = kb.inline_chunk_words(values)
    packed = int(words.sum()) * w
    raw = n * w
    if bits == 64 and version_minor >= 2:  # pylance 2.2 tries a dictionary on these
        if dictionary_enc.try_dictionary(block, cfg, version_minor=version_minor, why=[],
                                         baseline=packed) is not None:
            return None
    runs = int(kstats.run_count(data, w))
    if runs < cfg.rle_threshold * n and runs * (w + 1) < min(packed, raw):
        return None  # RLE is planned and may win: the full chain decides
    if packed < raw:
        shape = _shape("inline", bits, n, version_minor)
        out = np.empty(int(words.sum()), values.dtype)
        kb.inline_pack(values, out)
        src = out.view(np.uint8)
        sizes = (words * w).reshape(-1, 1)
        starts = np.zeros((len(sizes), 1), np.int64)
        np.cumsum(sizes[:-1, 0], out=starts[1:, 0])
        frame = shape._frame(sizes)
    else:
        shape = _shape("flat", bits, n, version_minor)
        src, starts, sizes, frame = data, shape.starts, shape.sizes, shape.frame
    if frame is None:
        return None
    out_starts, total, meta = frame
    page = np.empty(total, np.uint8)
    km.pack_chunks(np.zeros(0, np.uint8), src, starts, sizes, shape.zero_levels, 0,
                   shape.size_width, page, out_starts)
    return [meta, page], shape.layout


def _bit_length(x: np.ndarray) -> np.ndarray:
    """Bits needed by each unsigned value of ``x`` (0 for 0), as int64."""
    x = x.astype(np.uint64)
    out = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = x >= np.uint64(1 << s)
        out += big * s
        x = np.where(big, x >> np.uint64(s), x)
    return out + (x > 0)


def encode_plain_many(arrays: list, configs: list, *, version_minor: int) -> list:
    """:func:`encode_plain` of many pages at once: one result per array (None where the
    full chain must run), computed with a few whole-group numpy operations per group
    of pages of the same type width, length and configuration instead of a dozen
    calls per page. Each page's bytes are the same as :func:`encode_plain` gives."""
    out: list = [None] * len(arrays)
    groups: dict = {}
    for i, (arr, cfg) in enumerate(zip(arrays, configs)):
        bits = plain_bits(arr.type)
        if bits and len(arr) and not arr.null_count and _applies(cfg):
            groups.setdefault((bits, len(arr), cfg), []).append(i)
    for (bits, n, cfg), idx in groups.items():
        if len(idx) < GROUP_MIN_PAGES or n > GROUP_MAX_ROWS:
            for i in idx:
                out[i] = encode_plain(arrays[i], cfg, version_minor=version_minor)
            continue
        for i, page in zip(idx, _encode_group([arrays[i] for i in idx], bits, n, cfg,
                                              version_minor)):
            out[i] = page
    return out


def _encode_group(arrays: list, bits: int, n: int, cfg: EncodingConfig,
                  version_minor: int) -> list:
    """The pages of same-shaped plain arrays (see :func:`encode_plain_many`)."""
    w = bits // 8
    ut = np.dtype(f"<u{w}")
    k = len(arrays)
    values = np.empty((k, n), ut)
    for r, arr in enumerate(arrays):
        values[r] = np.frombuffer(arr.buffers()[1], ut, count=n, offset=arr.offset * w)
    values.flags.writeable = False  # the kernels see read-only values, as in encode_plain
    raw = values.view(np.uint8)
    # InlineBitpacking: one width per 1024 values (bitpacking.CHUNK)
    block = bitpacking.CHUNK
    full, nb = n // block, -(-n // block)
    ors = np.empty((k, nb), ut)
    if full:
        ors[:, :full] = np.bitwise_or.reduce(values[:, :full * block].reshape(k, full, block),
                                             axis=2)
    if n % block:
        ors[:, full] = np.bitwise_or.reduce(values[:, full * block:], axis=1)
    words = 1 + _bit_length(ors) * (block // bits)
    packed = words.sum(axis=1) * w
    runs = 1 + np.count_nonzero(values[:, 1:] != values[:, :-1], axis=1)
    # else RLE is planned (its floor, runs x (width + 1) bytes, is below the best of
    # flat and bitpacked, as in strategy._fixed_default): the full chain decides
    keep = (runs >= cfg.rle_threshold * n) | (runs * (w + 1) >= np.minimum(packed, n * w))
    pages: list = [None] * k
    if bits == 64 and version_minor >= 2 and n >= dictionary_enc.MIN_VALUES:
        # pylance 2.2 tries a dictionary on these: where the cardinality estimate
        # (try_dictionary's first test) does not rule it out, encode_plain decides
        rows = np.flatnonzero(keep)
        cards = np.empty(len(rows))
        registers = np.zeros((len(rows), 1 << dictionary_enc.HLL_PRECISION), np.uint8)
        sub = raw[rows] if len(rows) < k else raw
        sub.flags.writeable = False  # (one specialisation: the values are read-only)
        status = kstats_rows.hll_fixed_rows(sub, w, dictionary_enc.HLL_SEED, registers, cards)
        if status != kstats_rows.OK:
            raise AssertionError(f"hll_fixed_rows: status {status}")  # shapes are ours
        ruled_out = (cards >= n / cfg.dict_divisor) | (cards > dictionary_enc.MAX_ITEMS)
        for r in rows[~ruled_out].tolist():
            pages[r] = encode_plain(arrays[r], cfg, version_minor=version_minor)
        keep[rows] = ruled_out
    inline = keep & (packed < n * w)
    flat_rows = np.flatnonzero(keep & ~inline)
    if len(flat_rows):
        shape = _shape("flat", bits, n, version_minor)
        if shape.frame is not None:
            out_starts, total, meta = shape.frame
            hdr = km.header_bytes(0, 1, shape.size_width)
            template = np.empty(total, np.uint8)
            zeros = np.zeros(n * w, np.uint8)
            zeros.flags.writeable = False  # (the kernel's read-only specialisation)
            km.pack_chunks(np.zeros(0, np.uint8), zeros, shape.starts,
                           shape.sizes, shape.zero_levels, 0, shape.size_width, template,
                           out_starts)
            data = np.empty((len(flat_rows), total), np.uint8)
            data[:] = template
            for c in range(len(out_starts)):
                s, z, o = int(shape.starts[c, 0]), int(shape.sizes[c, 0]), int(out_starts[c])
                data[:, o + hdr:o + hdr + z] = raw[flat_rows, s:s + z]
            for j, r in enumerate(flat_rows):
                pages[r] = ([meta, data[j]], shape.layout)
    rows = np.flatnonzero(inline)
    if len(rows):
        shape = _shape("inline", bits, n, version_minor)
        sizes = words[rows] * w
        starts = np.zeros_like(sizes)
        np.cumsum(sizes[:, :-1], axis=1, out=starts[:, 1:])
        cbytes = (sizes + 7) // 8 * 8 + km.header_bytes(0, 1, shape.size_width)
        out_starts = np.zeros_like(cbytes)
        np.cumsum(cbytes[:, :-1], axis=1, out=out_starts[:, 1:])
        metas = (((cbytes // 8 - 1) << 4) | shape.log2).astype(shape.meta_dtype)
        metas = metas.view(np.uint8)
        # every page's packed values and chunks are slices of two group buffers
        wends = np.cumsum(words[rows].sum(axis=1)).tolist()
        pends = np.cumsum(cbytes.sum(axis=1)).tolist()
        src_all = np.empty(wends[-1], ut)
        page_all = np.empty(pends[-1], np.uint8)
        starts = starts.reshape(len(rows), -1, 1)
        sizes = sizes.reshape(len(rows), -1, 1)
        empty = np.zeros(0, np.uint8)
        w0 = p0 = 0
        for j, r in enumerate(rows.tolist()):
            src, page = src_all[w0:wends[j]], page_all[p0:pends[j]]
            kb.inline_pack(values[r], src)
            km.pack_chunks(empty, src.view(np.uint8), starts[j], sizes[j], shape.zero_levels,
                           0, shape.size_width, page, out_starts[j])
            pages[r] = ([metas[j], page], shape.layout)
            w0, p0 = wends[j], pends[j]
    return pages
