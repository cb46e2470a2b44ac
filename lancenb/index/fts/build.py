"""Building an INVERTED index: tokenize a column, sort the (token, document, position)
triples into CSR posting lists (numpy, no per-row Python), write the partition files
(:mod:`.format`) under ``_indices/<uuid>/``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError
from lancenb.index.fts import format as fmt
from lancenb.index.fts.tokenize import TokenizerParams, tokenize
from lancenb.index.scalar.common import varint as _varint

__all__ = ["DETAILS_TYPE_URL", "text_column", "build_partition", "write_inverted",
           "details_bytes", "check_column_type"]

DETAILS_TYPE_URL = "/lance.table.InvertedIndexDetails"


def check_column_type(t: pa.DataType, column: str) -> None:
    inner = t.value_type if (pa.types.is_list(t) or pa.types.is_large_list(t)) else t
    if not (pa.types.is_string(inner) or pa.types.is_large_string(inner)
            or pa.types.is_string_view(inner)):
        raise TypeError(f"INVERTED index column {column} must be string, large string or "
                        f"a list of strings, not {t}")


def text_column(values) -> pa.Array:
    """A column as one text per row: lists of strings joined by a space (a null list
    is a null text); a JSON column's text."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    t = values.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = pc.binary_join(values.cast(pa.list_(pa.string())), " ")
    if not pa.types.is_string(values.type):
        values = values.cast(pa.string())
    return values


def build_partition(params: TokenizerParams, texts: pa.Array,
                    row_ids: np.ndarray) -> fmt.Partition:
    """A partition over ``texts`` (null texts are not documents) with ``row_ids``."""
    valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    if not valid.all():
        texts = texts.filter(pa.array(valid))
        row_ids = row_ids[valid]
    tk = tokenize(params, texts)
    ntok = len(tk.vocab)
    # tokens come in document then position order: a stable sort by (token, document)
    key = tk.token_ids.astype(np.int64) * max(len(texts), 1) + tk.doc
    order = np.argsort(key, kind="stable")
    tid, doc, pos = tk.token_ids[order], tk.doc[order], tk.position[order]
    if len(tid):
        new = np.r_[True, (tid[1:] != tid[:-1]) | (doc[1:] != doc[:-1])]
        starts = np.flatnonzero(new)
        freqs = np.diff(np.r_[starts, len(tid)]).astype(np.uint32)
        p_tok, p_doc = tid[starts], doc[starts].astype(np.uint32)
    else:
        starts = np.zeros(0, np.int64)
        freqs = np.zeros(0, np.uint32)
        p_tok, p_doc = np.zeros(0, np.int64), np.zeros(0, np.uint32)
    counts = np.bincount(p_tok, minlength=ntok)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    part = fmt.Partition(list(tk.vocab), np.asarray(row_ids, np.uint64), tk.num_tokens,
                         offsets, p_doc, freqs)
    if params.with_position:
        part.pos_offsets = np.concatenate([starts, [len(tid)]]).astype(np.int64)
        part.positions = pos.astype(np.uint32)
    return part


def write_inverted(files, params: TokenizerParams, batches,
                   fragment_ids=None) -> fmt.Partition:
    """Build over ``(values, row ids)`` batches and write the index; returns the
    partition. With ``fragment_ids`` (a distributed build), one partition numbered
    after the first fragment and its ``part_<id>_metadata.lance``, for
    :func:`merge_index_metadata` to gather."""
    texts, ids = [], []
    for values, keys in batches:
        texts.append(text_column(values))
        ids.append(np.asarray(keys, np.uint64))
    arr = pa.concat_arrays(texts) if texts else pa.array([], pa.string())
    rid = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
    part = build_partition(params, arr, rid)
    if fragment_ids is None:
        fmt.write_partition(files, 0, part)
        fmt.write_metadata(files, params, [0])
        return part
    pid = min(int(f) for f in fragment_ids) if len(fragment_ids) else 0
    fmt.write_partition(files, pid, part)
    fmt.write_metadata(files, params, [pid], name=f"part_{pid}_metadata.lance")
    return part


def merge_index_metadata(files) -> None:
    """Gather the partitions of a distributed build (their ``part_<id>_metadata.lance``
    files) into the index's ``metadata.lance``."""
    pids, params = [], None
    for name in files.store.list(files.rel("").rstrip("/")):
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if base.startswith("part_") and base.endswith("_metadata.lance"):
            p, ids, _ = fmt.read_metadata(files, base)
            params = params or p
            pids.extend(ids)
    if params is None:
        raise InvalidInputError(f"index {files.uuid}: no partition metadata to merge")
    fmt.write_metadata(files, params, sorted(set(pids)))


def details_bytes(params: TokenizerParams) -> bytes:
    """The manifest's ``InvertedIndexDetails`` message for ``params``."""
    def s(field: int, text: str) -> bytes:
        raw = text.encode()
        return _varint(field << 3 | 2) + _varint(len(raw)) + raw

    def v(field: int, value: int) -> bytes:
        return _varint(field << 3) + _varint(int(value)) if value else b""

    out = s(1, params.base_tokenizer) + s(2, f'"{params.language}"')
    out += v(3, params.with_position)
    if params.max_token_length is not None:
        out += _varint(4 << 3) + _varint(int(params.max_token_length))
    out += v(5, params.lower_case) + v(6, params.stem) + v(7, params.remove_stop_words)
    out += v(8, params.ascii_folding) + v(9, params.min_ngram_length)
    out += v(10, params.max_ngram_length) + v(11, params.prefix_only)
    return out


def params_from(kwargs: dict) -> TokenizerParams:
    try:
        return TokenizerParams.from_kwargs(kwargs)
    except TypeError as e:  # (a bad value type)
        raise InvalidInputError(str(e)) from e


def rebuild_inverted(uri: str, old_uuid: str, batches):
    """The INVERTED index ``old_uuid`` built again with its parameters over ``(values,
    row addresses)`` batches (a compaction moved the rows): ``(uuid, details type URL,
    details, index version, [(file, size)])``."""
    import uuid as uuidlib

    from lancenb.index.scalar.common import IndexFiles

    old = IndexFiles(uri, old_uuid)
    if old.exists("metadata.lance"):
        params = fmt.read_metadata(old)[0]
    else:
        params = fmt.read_legacy(old)[0]
    uid = str(uuidlib.uuid4())
    files = IndexFiles(uri, uid)
    write_inverted(files, params, batches)
    return uid, DETAILS_TYPE_URL, details_bytes(params), 0, \
        [(n, int(sz)) for n, sz in files.written]
