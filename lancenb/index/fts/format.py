"""The files of an INVERTED index partition, in pylance's layout.

``metadata.lance``: no rows of interest; schema metadata ``params`` (the tokenizer,
JSON), ``partitions`` (JSON list of ids) and ``token_set_format``. Partition ``p`` has:

- ``part_p_tokens.lance``: the vocabulary, ``_token`` (utf8, byte order) and
  ``_token_id`` (uint32) (``token_set_format="arrow"``, what lancenb writes), or one
  row of ``_token_fst_bytes`` (an FST map, ``"fst"``, what pylance 14 writes);
- ``part_p_invert.lance``: one row per token id: ``_posting`` (list of blocks),
  ``_max_score`` (float32), ``_length`` (documents), and in format 2 (what pylance 14
  and lancenb write) ``_impacts`` (:mod:`.impacts`) and positions as
  ``_compressed_position`` and ``_position_block_offset`` (:mod:`.positions2`); in
  format 1 (read only) positions as ``_position`` (list per document of blocks);
- ``part_p_docs.lance``: ``_rowid`` (uint64) and ``_num_tokens`` (uint32) per document
  id, schema metadata ``total_tokens``.

A posting block starts with its float32 maximum BM25 score; a full block (128 documents)
then holds the first document id (uint32), its bit width and the bit-packed document
id deltas (:mod:`.bitpack`), the bit width and bit-packed frequencies. The last, partial
block holds the ids then the frequencies as raw uint32 (pylance's format 1) or as LEB128
varints, ids delta-coded (format 2, ``posting_tail_codec=varint_delta_v1``). A
document's positions: a block holding their count (uint32), full 128-position blocks as
posting ids, then the rest as raw uint32.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lancenb.errors import NotSupportedError
from lancenb.index.fts import bitpack, impacts, positions2
from lancenb.index.fts.tokenize import TokenizerParams

__all__ = ["Partition", "write_partition", "write_metadata", "read_metadata",
           "read_partition", "K1", "B", "idf"]

K1 = 1.2
B = 0.75
BLOCK = bitpack.BLOCK


def idf(token_docs, num_docs):
    """pylance's BM25 inverse document frequency (float32)."""
    nd = np.float32(num_docs)
    td = np.asarray(token_docs, np.float32)
    return np.log((nd - td + np.float32(0.5)) / (td + np.float32(0.5)) + np.float32(1.0),
                  dtype=np.float32)


@dataclass
class Partition:
    """One partition in memory: the vocabulary, documents and CSR posting lists (per
    token id: ascending document ids with frequencies, and positions per posting)."""

    tokens: list
    row_ids: np.ndarray
    num_tokens: np.ndarray
    offsets: np.ndarray
    doc_ids: np.ndarray
    freqs: np.ndarray
    pos_offsets: np.ndarray | None = None
    positions: np.ndarray | None = None
    fst: bool = False
    # (average document length, BM25 length norms) of the last search: score.py's cache
    norms: tuple | None = None
    # (average document length, {token id: per-block maxima}) for top-k pruning: score.py
    block_max: tuple | None = None

    @property
    def total_tokens(self) -> int:
        return int(self.num_tokens.sum(dtype=np.uint64))

    def lookup(self) -> dict:
        d = getattr(self, "_lookup", None)
        if d is None:
            d = self._lookup = {t: i for i, t in enumerate(self.tokens)}
        return d


# -- writing ------------------------------------------------------------------------------
def _binary(chunks: list[bytes]) -> pa.Array:
    return pa.array(chunks, pa.large_binary())


def _block_scores(part: Partition) -> np.ndarray:
    """The maximum BM25 score of each posting block (per block, in token order)."""
    n = len(part.row_ids)
    avgdl = np.float32(part.total_tokens) / np.float32(max(n, 1))
    lengths = np.diff(part.offsets)
    dl = part.num_tokens[part.doc_ids].astype(np.float32)
    f = part.freqs.astype(np.float32)
    norm = np.float32(K1) * (np.float32(1 - B) + np.float32(B) * dl / avgdl)
    s = f / (f + norm)
    tok = np.repeat(np.arange(len(lengths)), lengths)
    within = np.arange(len(s)) - np.repeat(part.offsets[:-1], lengths)
    nblocks = (lengths + BLOCK - 1) // BLOCK
    first_block = np.concatenate([[0], np.cumsum(nblocks)])[:-1]
    block = first_block[tok] + within // BLOCK
    out = np.full(int(nblocks.sum()), -np.inf, np.float32)
    np.maximum.at(out, block, s.astype(np.float32))
    w = idf(lengths, n) * np.float32(K1 + 1)
    return (out * np.repeat(w, nblocks)).astype(np.float32)


def _full_blocks(scores: np.ndarray, docs: np.ndarray, freqs: np.ndarray) -> list[bytes]:
    """Full posting blocks, ``(n, 128)`` document ids and frequencies: each the block's
    score, first id, bit width and packed id deltas, bit width and packed frequencies
    (packed together per bit width)."""
    d = docs.astype(np.uint32)
    deltas = np.diff(d, axis=1, prepend=d[:, :1])
    f = freqs.astype(np.uint32)
    db, fb = bitpack.num_bits(deltas), bitpack.num_bits(f)
    packed_d: list = [b""] * len(d)
    packed_f: list = [b""] * len(d)
    for bits in np.unique(db).tolist():
        sel = np.flatnonzero(db == bits)
        for i, raw in zip(sel.tolist(), bitpack.pack(deltas[sel], bits)):
            packed_d[i] = raw
    for bits in np.unique(fb).tolist():
        sel = np.flatnonzero(fb == bits)
        for i, raw in zip(sel.tolist(), bitpack.pack(f[sel], bits)):
            packed_f[i] = raw
    heads = np.zeros(len(d), dtype=[("s", "<f4"), ("first", "<u4"), ("bits", "u1")])
    heads["s"], heads["first"], heads["bits"] = scores, d[:, 0], db
    hb = heads.tobytes()
    return [hb[9 * i:9 * i + 9] + packed_d[i] + bytes([int(fb[i])]) + packed_f[i]
            for i in range(len(d))]


def _posting_column(part: Partition, scores: np.ndarray) -> pa.Array:
    """``_posting``: full blocks bit-packed (per block, for the frequent tokens), the
    last partial block of every token as format 2 varints (:mod:`.impacts`)."""
    lengths = np.diff(part.offsets)
    nfull = lengths // BLOCK
    tail = lengths % BLOCK
    nblocks = nfull + (tail > 0)
    first_block = np.concatenate([[0], np.cumsum(nblocks)])[:-1]
    has_tail = np.flatnonzero(tail > 0)
    tail_scores = scores[first_block[has_tail] + nfull[has_tail]]
    tail_start = part.offsets[:-1][has_tail] + nfull[has_tail] * BLOCK
    buf8, at = impacts.tails(tail_start, tail[has_tail], tail_scores, part.doc_ids,
                             part.freqs)
    raw = buf8.tobytes()
    tails: dict = {}
    for j, t in enumerate(has_tail.tolist()):
        tails[t] = raw[int(at[j]):int(at[j + 1])]
    if not nfull.any():
        blocks = [tails[t] for t in range(len(lengths)) if t in tails]
    else:
        # every full block at once: its token, place in the token and first posting
        tok = np.repeat(np.arange(len(lengths)), nfull)
        k = np.arange(len(tok)) - np.repeat(np.concatenate([[0], np.cumsum(nfull)])[:-1],
                                              nfull)
        start = part.offsets[:-1][tok] + k * BLOCK
        idx = start[:, None] + np.arange(BLOCK)[None, :]
        full = _full_blocks(scores[first_block[tok] + k], part.doc_ids[idx],
                            part.freqs[idx])
        blocks = []
        at = 0
        for t in range(len(lengths)):
            n = int(nfull[t])
            if n:
                blocks.extend(full[at:at + n])
                at += n
            if t in tails:
                blocks.append(tails[t])
    offs = np.concatenate([[0], np.cumsum(nblocks)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offs), _binary(blocks))


def _invert_columns(part: Partition) -> pa.Table:
    """The rows of ``part_p_invert.lance`` for ``part``'s tokens (``part`` may hold a
    range of an index's tokens: its documents and lengths are the whole partition's)."""
    scores = _block_scores(part)
    lengths = np.diff(part.offsets)
    nblocks = (lengths + BLOCK - 1) // BLOCK
    bounds = np.concatenate([[0], np.cumsum(nblocks)]).astype(np.int64)
    max_score = np.maximum.reduceat(scores, bounds[:-1][nblocks > 0]) if len(scores) \
        else np.zeros(0, np.float32)
    full_max = np.zeros(len(lengths), np.float32)
    full_max[nblocks > 0] = max_score
    # format 2, what pylance 14 writes: varint tails, _impacts (its scorer skips blocks
    # with them) and positions in one stream per token
    cols = {"_posting": _posting_column(part, scores),
            "_max_score": pa.array(full_max, pa.float32()),
            "_length": pa.array(lengths.astype(np.uint32), pa.uint32()),
            "_impacts": impacts.impacts_column(part.offsets, part.doc_ids, part.freqs,
                                               part.num_tokens)}
    meta = dict(impacts.FORMAT2_META)
    if part.positions is not None:
        cols["_compressed_position"], cols["_position_block_offset"] = \
            positions2.position_columns(part.offsets, part.freqs, part.pos_offsets,
                                        part.positions)
        meta.update(positions2.META)
    fields = [pa.field(k, v.type, nullable=False) for k, v in cols.items()]
    return pa.table(cols, schema=pa.schema(fields, metadata=meta))


def _write_tokens_docs(files, pid: int, tokens: list, row_ids, num_tokens) -> None:
    order = sorted(range(len(tokens)), key=lambda i: tokens[i].encode())
    toks = pa.table({"_token": pa.array([tokens[i] for i in order], pa.string()),
                     "_token_id": pa.array(np.asarray(order, np.uint32), pa.uint32())})
    files.write(f"part_{pid}_tokens.lance", toks, toks.schema)
    total = int(np.asarray(num_tokens).sum(dtype=np.uint64))
    docs = pa.table({"_rowid": pa.array(row_ids, pa.uint64()),
                     "_num_tokens": pa.array(num_tokens, pa.uint32())},
                    schema=pa.schema([pa.field("_rowid", pa.uint64(), False),
                                      pa.field("_num_tokens", pa.uint32(), False)],
                                     metadata={"total_tokens": str(total)}))
    files.write(f"part_{pid}_docs.lance", docs, docs.schema)


def write_partition(files, pid: int, part: Partition) -> None:
    """Write partition ``pid``'s three files with ``files`` (an ``IndexFiles``)."""
    _write_tokens_docs(files, pid, part.tokens, part.row_ids, part.num_tokens)
    inv = _invert_columns(part)
    files.write(f"part_{pid}_invert.lance", inv, inv.schema)


def write_partition_ranges(files, pid: int, tokens: list, row_ids: np.ndarray,
                           num_tokens: np.ndarray, ranges, with_positions: bool) -> None:
    """Write partition ``pid`` from its posting lists given token range by token range
    (``ranges`` as :meth:`.spill.Runs.ranges` yields them, in token id order): the
    invert file is written range by range."""
    _write_tokens_docs(files, pid, tokens, row_ids, num_tokens)
    probe = Partition([], row_ids, num_tokens, np.zeros(1, np.int64), np.zeros(0, np.uint32),
                      np.zeros(0, np.uint32), np.zeros(1, np.int64) if with_positions else None,
                      np.zeros(0, np.uint32) if with_positions else None)
    schema = _invert_columns(probe).schema

    def batches():
        for _lo, _hi, offsets, docs, freqs, pos_offsets, positions in ranges:
            part = Partition([], row_ids, num_tokens, offsets, docs, freqs, pos_offsets,
                             positions)
            for b in _invert_columns(part).to_batches():
                yield b

    files.write(f"part_{pid}_invert.lance", None, schema, batches=batches())


def write_metadata(files, params: TokenizerParams, partitions: list[int],
                   name: str = "metadata.lance") -> None:
    """The index's ``metadata.lance`` (or a distributed build's partition metadata),
    format 2 (see :func:`write_partition`)."""
    meta = {"params": params.to_json(), "partitions": json.dumps(partitions),
            "token_set_format": "arrow", **impacts.FORMAT2_META}
    if params.with_position:
        meta.update(positions2.META)
    schema = pa.schema([pa.field("deleted_fragments", pa.binary(), False)], metadata=meta)
    t = pa.table({"deleted_fragments": pa.array([BitMap().serialize()], pa.binary())},
                 schema=schema)
    files.write(name, t, schema)


# -- reading ------------------------------------------------------------------------------
def read_metadata(files, name: str = "metadata.lance") -> tuple[TokenizerParams, list[int],
                                                                dict]:
    """``(params, partition ids, all schema metadata)`` of an index."""
    if not files.exists(name):
        raise NotSupportedError(f"INVERTED index {files.uuid}: the legacy layout without "
                                f"metadata.lance is not read by lancenb")
    r = files.reader(name)
    meta = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
                                                         else v)
            for k, v in (r.schema_full.metadata or {}).items()}
    return TokenizerParams.from_json(meta.get("params")), json.loads(meta.get("partitions",
                                                                               "[]")), meta


def _meta(reader) -> dict:
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
                                                        else v)
            for k, v in (reader.schema_full.metadata or {}).items()}


def _varints(data: np.ndarray) -> np.ndarray:
    """Decode a run of LEB128 varints (uint8 array) to uint64."""
    if data.size == 0:
        return np.zeros(0, np.uint64)
    ends = np.flatnonzero(data < 0x80)
    starts = np.concatenate([[0], ends[:-1] + 1])
    idx = np.arange(len(data))
    which = np.repeat(np.arange(len(ends)), ends - starts + 1)
    shift = (idx - starts[which]).astype(np.uint64) * np.uint64(7)
    vals = (data.astype(np.uint64) & np.uint64(0x7F)) << shift
    out = np.zeros(len(ends), np.uint64)
    np.add.at(out, which, vals)
    return out


def _decode_postings(column: pa.Array, lengths: np.ndarray, varint: bool):
    """CSR ``(offsets, doc ids, freqs)`` from the ``_posting`` column."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    blocks = column.values.to_pylist() if len(column) else []
    lengths = lengths.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    docs = np.zeros(int(offsets[-1]), np.uint32)
    freqs = np.zeros(int(offsets[-1]), np.uint32)
    list_offs = np.asarray(column.offsets.to_numpy(), np.int64)
    for t in range(len(lengths)):
        at = int(offsets[t])
        n = int(lengths[t])
        for blk in blocks[list_offs[t]:list_offs[t + 1]]:
            k = min(BLOCK, n - (at - int(offsets[t])))
            if k == BLOCK:
                first = int.from_bytes(blk[4:8], "little")
                db = blk[8]
                end = 9 + 16 * db
                d = bitpack.unpack([blk[9:end]], db)[0]
                d[0] = first
                docs[at:at + k] = np.cumsum(d, dtype=np.uint64).astype(np.uint32)
                fb = blk[end]
                freqs[at:at + k] = bitpack.unpack([blk[end + 1:end + 1 + 16 * fb]], fb)[0]
            elif varint:
                v = _varints(np.frombuffer(blk, np.uint8, offset=4))
                docs[at:at + k] = np.cumsum(v[:k]).astype(np.uint32)
                freqs[at:at + k] = v[k:2 * k].astype(np.uint32)
            else:
                v = np.frombuffer(blk, "<u4", offset=4)
                docs[at:at + k] = v[:k]
                freqs[at:at + k] = v[k:2 * k]
            at += k
    return offsets, docs, freqs


def _decode_positions(column: pa.Array, freqs: np.ndarray):
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    per_doc = column.values  # list<large_binary>, one per posting
    blocks = per_doc.values.to_pylist()
    offs = np.asarray(per_doc.offsets.to_numpy(), np.int64)
    pos_offsets = np.concatenate([[0], np.cumsum(freqs.astype(np.int64))])
    out = np.zeros(int(pos_offsets[-1]), np.uint32)
    for e in range(len(per_doc)):
        bl = blocks[offs[e]:offs[e + 1]]
        count = int.from_bytes(bl[0], "little")
        at = int(pos_offsets[e])
        for blk in bl[1:]:
            if len(blk) >= 5 and count - (at - int(pos_offsets[e])) >= BLOCK:
                nb = blk[4]
                d = bitpack.unpack([blk[5:5 + 16 * nb]], nb)[0]
                d[0] = int.from_bytes(blk[:4], "little")
                out[at:at + BLOCK] = np.cumsum(d, dtype=np.uint64).astype(np.uint32)
                at += BLOCK
            else:
                v = np.frombuffer(blk, "<u4")
                out[at:at + len(v)] = v
                at += len(v)
    return pos_offsets, out


def _segmented_cumsum(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each run of ``counts`` values."""
    cs = np.cumsum(values.astype(np.int64))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    base = np.repeat(cs[starts] - values[starts].astype(np.int64), counts)
    return (cs - base).astype(np.uint32)


def _decode_positions_v2(streams: pa.Array, block_offsets: pa.Array, offsets: np.ndarray,
                         freqs: np.ndarray):
    """Positions in pylance's format 2 (``positions_layout=shared_stream_v2``,
    ``positions_codec=packed_delta_v1``): per token one byte stream, per posting block
    of 128 documents a run starting at its ``_position_block_offset``: the block's
    positions (each document's delta-coded, its first absolute) in full 128-value
    blocks (a bit width byte and ``BitPacker4x`` words), the rest as LEB128 varints."""
    streams = streams.to_pylist()
    block_offsets = block_offsets.to_pylist()
    pos_offsets = np.concatenate([[0], np.cumsum(freqs.astype(np.int64))])
    out = np.zeros(int(pos_offsets[-1]), np.uint32)
    for t, data in enumerate(streams):
        lo, hi = int(offsets[t]), int(offsets[t + 1])
        starts = list(block_offsets[t]) + [len(data)]
        for b in range(len(starts) - 1):
            a, z = lo + b * BLOCK, min(lo + (b + 1) * BLOCK, hi)
            if a >= z:
                break
            counts = freqs[a:z].astype(np.int64)
            total = int(counts.sum())
            at = starts[b]
            vals = []
            for _ in range(total // BLOCK):
                nb = data[at]
                vals.append(bitpack.unpack([data[at + 1:at + 1 + 16 * nb]], nb)[0])
                at += 1 + 16 * nb
            rest = total % BLOCK
            if rest:
                v = _varints(np.frombuffer(data[at:starts[b + 1]], np.uint8))[:rest]
                vals.append(v.astype(np.uint32))
            flat = np.concatenate(vals) if vals else np.zeros(0, np.uint32)
            out[int(pos_offsets[a]):int(pos_offsets[z])] = _segmented_cumsum(flat, counts)
    return pos_offsets, out


def read_legacy(files) -> tuple[TokenizerParams, Partition]:
    """An index in the layout before partitions (pylance < 0.28): ``tokens.lance``
    (``_token``, ``_token_id``; the tokenizer in its schema metadata), ``invert.lance``
    (one row per posting: ``_rowid``, ``_frequency``; schema metadata ``offsets`` per
    token id) and ``docs.lance`` (``_rowid``, ``_num_tokens``)."""
    tr = files.reader("tokens.lance")
    params = TokenizerParams.from_json(_meta(tr).get("tokenizer"))
    tt = tr.read_all().to_table()
    ids = tt.column("_token_id").to_pylist()
    tokens = [""] * ((max(ids) + 1) if ids else 0)
    for k, i in zip(tt.column("_token").to_pylist(), ids):
        tokens[int(i)] = k
    dt = files.reader("docs.lance").read_all().to_table()
    rows = np.asarray(dt.column("_rowid").to_numpy(), np.uint64)
    order = np.argsort(rows, kind="stable")
    rows, num = rows[order], np.asarray(dt.column("_num_tokens").to_numpy(), np.uint32)[order]
    ir = files.reader("invert.lance")
    offs = json.loads(_meta(ir).get("offsets", "[]"))
    it = ir.read_all().to_table()
    prow = np.asarray(it.column("_rowid").to_numpy(), np.uint64)
    freqs = np.asarray(it.column("_frequency").to_numpy(), np.float64).astype(np.uint32)
    offsets = np.asarray(list(offs) + [len(prow)], np.int64)[:len(tokens) + 1]
    docs = np.searchsorted(rows, prow).astype(np.uint32)
    # (postings of one token sorted by document)
    key = np.repeat(np.arange(len(tokens)), np.diff(offsets)).astype(np.int64)
    o = np.lexsort((docs, key))
    return params, Partition(tokens, rows, num, offsets, docs[o], freqs[o])


def read_partition(files, pid: int, meta: dict, with_positions: bool) -> Partition:
    """Partition ``pid`` of an index (positions only when asked for and stored in
    lancenb's layout)."""
    from lancenb.index.fts.fst import fst_keys

    tr = files.reader(f"part_{pid}_tokens.lance")
    tt = tr.read_all().to_table() if tr.num_rows() else None
    names = [f.name for f in tr.schema_full] if hasattr(tr, "schema_full") else []
    fst = "_token_fst_bytes" in names
    if fst:
        keys, ids = fst_keys(tt.column("_token_fst_bytes")[0].as_py()) if tt is not None \
            else ([], [])
        n = int(tt.column("_token_next_id")[0].as_py()) if tt is not None else 0
    else:
        keys = tt.column("_token").to_pylist() if tt is not None else []
        ids = tt.column("_token_id").to_pylist() if tt is not None else []
        n = (max(ids) + 1) if ids else 0
    tokens = [""] * n
    for k, i in zip(keys, ids):
        tokens[int(i)] = k
    dr = files.reader(f"part_{pid}_docs.lance")
    dt = dr.read_all().to_table()
    ir = files.reader(f"part_{pid}_invert.lance")
    imeta = _meta(ir)
    varint = imeta.get("posting_tail_codec") == "varint_delta_v1"
    inames = [f.name for f in ir.schema_full]
    if ir.num_rows():
        lengths = np.asarray(ir.read_column("_length").to_numpy(), np.int64)
        offsets, docs, freqs = _decode_postings(ir.read_column("_posting"), lengths, varint)
    else:
        offsets, docs, freqs = np.zeros(1, np.int64), np.zeros(0, np.uint32), \
            np.zeros(0, np.uint32)
    part = Partition(tokens, np.asarray(dt.column("_rowid").to_numpy(), np.uint64),
                     np.asarray(dt.column("_num_tokens").to_numpy(), np.uint32),
                     offsets, docs, freqs, fst=fst)
    if with_positions and "_position" in inames and ir.num_rows():
        part.pos_offsets, part.positions = _decode_positions(ir.read_column("_position"),
                                                             freqs)
    elif with_positions and "_compressed_position" in inames and ir.num_rows():
        if imeta.get("positions_codec", "packed_delta_v1") != "packed_delta_v1":
            raise NotSupportedError(f"INVERTED index {files.uuid}: positions codec "
                                    f"{imeta.get('positions_codec')} is not read by lancenb")
        part.pos_offsets, part.positions = _decode_positions_v2(
            ir.read_column("_compressed_position").combine_chunks(),
            ir.read_column("_position_block_offset").combine_chunks(), offsets, freqs)
    return part
