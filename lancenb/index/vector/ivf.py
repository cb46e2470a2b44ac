"""IVF vector indices in pylance's on-disk format: open one and search it.

Layout (pylance's "v3" IVF index; one directory ``_indices/<uuid>/`` per index)
-------------------------------------------------------------------------------
Two Lance files (2.x format), both carrying the IVF model as a global buffer whose
position the schema metadata key ``lance:ivf`` names (``"1"``: the buffer after the
file's schema). The model is a ``lance.index.pb.Ivf`` message
(:mod:`~lancenb.index.vector.ivfpb`).

``index.idx`` -- the sub-index of each partition and the IVF centroids:
  * metadata ``lance:index`` = ``{"type": "IVF_PQ", "distance_type": "l2"}`` (type one of
    IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_{FLAT,PQ,SQ}; distance ``l2``, ``cosine``,
    ``dot``);
  * for a FLAT sub-index: one column ``__flat_marker: uint64``, no rows, and
    ``lance:flat`` = a JSON list with one empty string per partition;
  * its ``Ivf`` buffer holds the centroids tensor ``(partitions, dim)`` and the loss;
    its offsets and lengths are zero (a FLAT sub-index has no rows).

``auxiliary.idx`` -- the quantized vectors ("storage"), grouped by partition:
  * its ``Ivf`` buffer has no centroids but the partition ``offsets`` (first row) and
    ``lengths`` (rows) in this file: partition ``p`` is rows
    ``offsets[p] .. offsets[p] + lengths[p]``;
  * metadata ``distance_type`` and ``storage_metadata``, a JSON list holding one JSON
    string: the quantizer's parameters;
  * column ``_rowid: uint64`` (row addresses, or row ids under stable row ids), then
    the vector column of the quantizer:

    ========  =====================================  ===================================
    type      column                                 storage_metadata
    ========  =====================================  ===================================
    FLAT      ``flat: fixed_size_list<f32>[dim]``    ``{"dim": 16}``
    PQ        ``__pq_code: fixed_size_list<u8>[m]``  ``{"codebook_position": 2,
                                                      "nbits": 8, "num_sub_vectors": m,
                                                      "dimension": d, "codebook_tensor":
                                                      [], "transposed": true}``
    SQ        ``__sq_code: fixed_size_list<u8>[d]``  ``{"dim": d, "num_bits": 8,
                                                      "bounds": {"start": lo, "end": hi}}``
    ========  =====================================  ===================================

  * PQ: the codebook is the global buffer ``codebook_position``, a ``Tensor`` of shape
    ``(2**nbits, dim)`` whose bytes are really ``[m][2**nbits][dim/m]``: each sub-vector's
    centroids in turn. With ``transposed`` the codes of a partition of ``n`` rows are
    stored sub-vector major: the partition's ``n*m`` code bytes are ``m`` runs of ``n``
    (the "row" ``i`` of the column is not row ``i``'s code). With ``nbits = 4`` a byte
    holds two sub-vectors (low nibble first).
  * SQ: one global range ``[lo, hi]`` over every value; a value ``v`` becomes
    ``u8((v - lo) * 255 / (hi - lo))`` (truncated, saturating).

Distances (as pylance computes them)
------------------------------------
Cosine indices are built on normalised vectors and searched with the normalised query,
with L2 for choosing partitions and inside PQ/SQ storage (their reported distance is
that squared L2 unless refined); a FLAT storage reports the cosine distance itself.
``l2`` is squared L2; ``dot`` is ``1 - q.x``. PQ (l2/cosine) encodes the residual
``x - centroid(partition)``, and the query's residual to each probed centroid is looked
up in a table of sub-vector distances (ADC); for dot it encodes ``x`` itself and a
row's distance is the table sum minus ``m - 1``. SQ l2 compares the query's own u8
codes with the rows' (sum of squared code differences times ``(hi - lo)**2 / 255**2``);
SQ dot dequantizes the rows and takes ``1 - q.x``.

Search: rank the partitions by the query's distance to their centroids, take the
``nprobes`` nearest, keep the best ``k * refine_factor`` rows of those partitions, and
with ``refine_factor`` re-rank them by the exact distance to the original vectors
(read from the dataset) before keeping ``k``.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict

import numpy as np

from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.file import LanceFileReader
from lancenb.index.vector import pq as pqmod
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.flat import allowed_mask, in_two
from lancenb.index.vector.ivfpb import decode_ivf, decode_tensor, read_legacy_file
from lancenb.index.vector.metrics import exact_distances, partition_distances
from lancenb.io.pools import module_lock
from lancenb.kernels.vector import distance as kd
from lancenb.kernels.vector import ivfscan as kscan
from lancenb.kernels.vector import topk as kt

__all__ = ["VectorIndex", "open_vector_index", "cached_indices", "index_cache_hit_rate",
           "INDEX_FILE", "AUX_FILE", "SUPPORTED_TYPES"]

INDEX_FILE = "index.idx"
AUX_FILE = "auxiliary.idx"
INDICES_DIR = "_indices"
IVF_KEY = b"lance:ivf"
INDEX_KEY = b"lance:index"
ROW_ID = "_rowid"
# HNSW sub-indices: each probed partition's graph is walked (hnsw.Graphs)
SUPPORTED_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ",
                   "IVF_HNSW_SQ")
METRICS = ("l2", "cosine", "dot")

# opened (decoded) indices by (dataset uri, index uuid), shared by every dataset object
# of the process: the files under a uuid never change, and a new index, an optimised
# or dropped one is a new uuid or no entry in the version's index list, so nothing is
# ever stale. Bounded: at most _CACHE_SIZE indices and _CACHE_BYTES of their storage,
# oldest used dropped first; an index larger than that is opened for each search. A
# dataset whose session has ``index_cache_size_bytes=0`` neither reads nor fills it.
_CACHE_SIZE = 16
_CACHE_BYTES = 2 << 30
_cache: OrderedDict = OrderedDict()
_cache_lock = module_lock(globals(), "_cache_lock")  # (a fresh one in a forked child)


def index_dir(ds, uuid: str) -> str:
    """The directory of index ``uuid`` of dataset ``ds``, named by the dataset's store
    (as scalar indices name theirs): ``memory://``'s bare root stays in memory."""
    from lancenb.io.store import ObjectStore

    return ObjectStore(ds.uri, storage_options_of(ds)).uri_of(f"{INDICES_DIR}/{uuid}")


def _json_meta(md: dict, key: bytes, path: str):
    raw = md.get(key)
    if raw is None:
        raise CorruptFileError(f"{path}: no {key.decode()!r} in the schema metadata")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise CorruptFileError(f"{path}: {key.decode()!r} is not JSON: {e}") from e


def _ivf_of(reader: LanceFileReader, path: str):
    md = reader.schema_full.metadata or {}
    pos = md.get(IVF_KEY)
    try:
        pos = int(pos)
    except (TypeError, ValueError):
        raise CorruptFileError(f"{path}: {IVF_KEY.decode()!r} metadata is {pos!r}, "
                               "not a global buffer number") from None
    return decode_ivf(reader.read_global_buffer(pos), f"{path}: IVF model")


class _Storage:
    """One quantizer's rows: ``row_ids`` grouped by partition and what scores them.

    FLAT float32 vectors and SQ codes are kept transposed per partition (``xt``, the
    layout :mod:`lancenb.kernels.vector.ivfscan` scores), not row-major: :attr:`data`
    rebuilds the row-major ``(n, d)`` array when asked (index maintenance),
    :meth:`rows` one partition's rows."""

    def __init__(self, kind, row_ids, offsets, lengths, data, params, row_major=False):
        self.kind = kind              # "FLAT", "PQ" or "SQ"
        self.row_ids = row_ids        # (n,) uint64
        self.offsets = offsets        # (P,) int64
        self.lengths = lengths        # (P,) int64
        self.params = params          # quantizer parameters (codebook, bounds, ...)
        self.dim = data.shape[1] if kind in ("FLAT", "SQ") else None
        # FLAT f32 and SQ: (n * d,) transposed per partition; PQ: codes as stored
        transpose = ((kind == "FLAT" and data.dtype == np.float32) or kind == "SQ") and \
            not row_major  # (HNSW graphs are walked row by row: hnsw.Graphs)
        self.xt = _transpose_blocks(data, offsets, lengths) if transpose else None
        self._data = None if transpose else data

    @property
    def data(self) -> np.ndarray:
        """FLAT: the ``(n, d)`` vectors; PQ: the codes as stored; SQ: ``(n, d)`` codes."""
        if self.xt is None:
            return self._data
        out = np.empty((len(self.row_ids), self.dim), self.xt.dtype)
        for p in range(len(self.offsets)):
            start, n = int(self.offsets[p]), int(self.lengths[p])
            out[start:start + n] = self.rows(p)
        return out

    def rows(self, p: int) -> np.ndarray:
        """Partition ``p``'s stored rows, row-major (FLAT vectors or SQ codes)."""
        start, n = int(self.offsets[p]), int(self.lengths[p])
        if self.xt is None:
            return self._data[start:start + n]
        d = self.dim
        return self.xt[start * d:(start + n) * d].reshape(d, n).T

    def nbytes(self) -> int:
        """Bytes this storage holds (what the index cache counts)."""
        held = [self.row_ids, self.offsets, self.lengths,
                self.xt if self.xt is not None else self._data]
        cb = self.params.get("codebook")
        if isinstance(cb, np.ndarray):
            held.append(cb)
        return int(sum(a.nbytes for a in held))


def _transpose_blocks(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray):
    """Row-major ``(n, d)`` rows as one ``(n * d,)`` array holding each partition's
    block dimension-major (see :mod:`lancenb.kernels.vector.ivfscan`)."""
    n, d = data.shape
    out = np.zeros(n * d, data.dtype)
    for p in range(len(offsets)):
        start, m = int(offsets[p]), int(lengths[p])
        if m:
            out[start * d:(start + m) * d] = data[start:start + m].T.reshape(-1)
    return out


def _read_storage(path: str, storage_options, num_partitions: int,
                  row_major: bool = False) -> _Storage:
    r = LanceFileReader(path, storage_options)
    md = r.schema_full.metadata or {}
    ivf = _ivf_of(r, path)
    if len(ivf.offsets) != num_partitions:
        raise CorruptFileError(f"{path}: {len(ivf.offsets)} partitions, the index file "
                               f"has {num_partitions} centroids")
    n = r.num_rows()
    offsets = ivf.offsets.astype(np.int64)
    lengths = ivf.lengths.astype(np.int64)
    if len(offsets) and (np.any(offsets + lengths > n) or np.any(offsets < 0)):
        raise CorruptFileError(f"{path}: partitions run past its {n} rows")
    meta = _json_meta(md, b"storage_metadata", path)
    params = json.loads(meta[0]) if isinstance(meta, list) and meta else {}
    names = r.schema_full.names
    row_ids = r.read_column(ROW_ID).combine_chunks()
    row_ids = np.asarray(row_ids.to_numpy(zero_copy_only=False), dtype=np.uint64)
    if "flat" in names:
        col = r.read_column("flat").combine_chunks()
        dim = col.type.list_size
        data = np.asarray(col.flatten().to_numpy(zero_copy_only=False)).reshape(-1, dim)
        return _Storage("FLAT", row_ids, offsets, lengths, data, params, row_major)
    if pqmod.CODE_COLUMN in names:
        params["codebook"] = pqmod.parse_codebook(
            decode_tensor(r.read_global_buffer(int(params["codebook_position"])),
                          f"{path}: PQ codebook"), params, path)
        col = r.read_column(pqmod.CODE_COLUMN).combine_chunks()
        data = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.uint8)
        if params.get("transposed") is False:  # a distributed segment's row-major codes
            rows = data.reshape(n, col.type.list_size)
            data = np.concatenate([pqmod.transpose_codes(rows[s:s + k]) for s, k in
                                   zip(offsets.tolist(), lengths.tolist())] + [data[:0]])
            params["transposed"] = True  # (held as a single-shot build's now)
        return _Storage("PQ", row_ids, offsets, lengths, data, params)
    if sqmod.CODE_COLUMN in names:
        col = r.read_column(sqmod.CODE_COLUMN).combine_chunks()
        dim = col.type.list_size
        data = np.asarray(col.flatten().to_numpy(zero_copy_only=False),
                          dtype=np.uint8).reshape(-1, dim)
        return _Storage("SQ", row_ids, offsets, lengths, data, params, row_major)
    raise NotSupportedError(f"{path}: vector storage with columns {names} is not supported")


class VectorIndex:
    """An opened IVF index (FLAT, PQ or SQ storage) of one vector column.

    Attributes
    ----------
    name, uuid, column, index_type : str
    metric : str
        ``"l2"``, ``"cosine"`` or ``"dot"``.
    fragment_ids : set of int
        The fragments whose rows the index holds.
    centroids : numpy.ndarray
        ``(num_partitions, dim)`` float32.
    """

    file_version = "V3"  # pylance's index_file_version ("Legacy": one index.idx file)

    def __init__(self, *, name, uuid, column, index_type, metric, fragment_ids,
                 centroids, storage: _Storage, loss=None, ds=None):
        self.name, self.uuid, self.column = name, uuid, column
        self.index_type, self.metric = index_type, metric
        self.fragment_ids = set(fragment_ids)
        # (uint8 for hamming: binary vectors and centroids, 8 dimensions a byte)
        self.centroids = np.ascontiguousarray(
            centroids, dtype=np.uint8 if metric == "hamming" else np.float32)
        self.storage = storage
        self.loss = loss
        self.dataset = ds
        self.graphs = None  # IVF_HNSW_*: the partitions' graphs (hnsw.Graphs)

    @property
    def num_partitions(self) -> int:
        return len(self.centroids)

    @property
    def dim(self) -> int:
        return self.centroids.shape[1]

    def partition_sizes(self) -> list[int]:
        return self.storage.lengths.tolist()

    def bind(self, ds) -> "VectorIndex":
        """This index searching the rows of dataset version ``ds`` (refine reads it)."""
        out = object.__new__(VectorIndex)
        out.__dict__.update(self.__dict__)
        out.dataset = ds
        return out

    # -- search ------------------------------------------------------------------------
    def centroid_distances(self, query) -> np.ndarray | None:
        """The query's squared L2 distances to the centroids, nearest first (cosine
        indices: of the normalised query), or None for dot and hamming indices."""
        if self.metric not in ("l2", "cosine"):
            return None
        q = np.asarray(query, np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            return None  # (search says what is wrong)
        if self.metric == "cosine":
            norm = np.sqrt(np.dot(q.astype(np.float64), q))
            q = (q / np.float32(norm)).astype(np.float32) if norm > 0 else q
        return np.sort(partition_distances(self.centroids, q, "l2"))

    def search(self, query, k: int, *, nprobes: int = 1, refine_factor: int | None = None,
               ef: int | None = None, allow: np.ndarray | None = None):
        """The ``k`` nearest indexed rows to ``query``.

        Parameters
        ----------
        query : array-like of float, shape ``(dim,)``
        k : int
        nprobes : int
            Partitions searched (the nearest centroids).
        refine_factor : int, optional
            Keep ``k * refine_factor`` candidates and re-rank them by exact distance.
        ef : int, optional
            IVF_HNSW_*: the beam of each partition's graph walk (default: the
            candidates kept, ``k * refine_factor``, and half as many again).
        allow : numpy.ndarray of uint64, optional
            Sorted row ids a prefilter allows; None allows every row.

        Returns
        -------
        (numpy.ndarray of uint64, numpy.ndarray of float32)
            Row ids (addresses unless stable row ids) and distances, best first.
        """
        if k <= 0:
            self._probe_order(query)  # (checks the query)
            return np.zeros(0, np.uint64), np.zeros(0, np.float32)
        q, inner, order = self._probe_order(query)
        nprobes = max(1, min(int(nprobes), self.num_partitions))
        parts = order[:nprobes]
        _note_lookups(self, parts)
        want = k * (int(refine_factor) if refine_factor else 1)
        if self.graphs is not None:
            ids, dists = self.graphs.search(self, q, parts, inner, want, ef, allow)
        else:
            ids, dists = self._scan_partitions(q, parts, inner, want, allow)
        if refine_factor and len(ids):
            ids, dists = self._refine(query, ids, k)
        else:
            ids, dists = ids[:k], dists[:k]
        return ids, dists

    def _probe_order(self, query):
        """``(query as searched, the metric partitions are scored by, partitions
        nearest first)``."""
        q = np.asarray(query).reshape(-1).astype(
            np.uint8 if self.metric == "hamming" else np.float32)
        if q.shape[0] != self.dim:
            raise InvalidInputError(f"query has {q.shape[0]} dimensions, the index on "
                                    f"{self.column!r} has {self.dim}")
        if self.metric == "cosine":
            norm = np.sqrt(np.dot(q.astype(np.float64), q))
            q = (q / np.float32(norm)).astype(np.float32) if norm > 0 else q
        inner = "l2" if self.metric == "cosine" else self.metric
        pdist = partition_distances(self.centroids, q, inner)
        return q, inner, np.argsort(pdist, kind="stable")

    def probes_to_fill(self, query, k: int, allow, start: int, limit: int) -> int:
        """How many partitions pylance probes when the first ``start`` gave fewer than
        ``k`` rows: the next ones in probe order, one at a time, until the rows they
        can give (each at most ``k``, only rows ``allow`` passes) add up to ``k``, at
        most ``limit``."""
        limit = max(1, min(int(limit), self.num_partitions))
        parts = self._probe_order(query)[2][:limit]
        st = self.storage
        counts = st.lengths[parts].astype(np.int64)
        if allow is not None and counts.sum():
            starts = np.repeat(st.offsets[parts] - (np.cumsum(counts) - counts), counts)
            where = starts + np.arange(int(counts.sum()), dtype=np.int64)
            ok = allowed_mask(st.row_ids[where], allow).astype(np.int64)
            ends = np.cumsum(counts)
            counts = np.diff(np.concatenate([[0], np.cumsum(ok)[ends - 1]])) \
                if len(ok) else counts * 0
        filled = np.cumsum(np.minimum(counts, k))
        need = int(np.searchsorted(filled, k, side="left")) + 1
        return min(max(need, int(start)), limit)

    def _scan_partitions(self, q, parts, inner, want, allow):
        """The best ``want`` rows of partitions ``parts`` (ties by row id): every row
        scored by one kernel call, disallowed rows dropped, one top-k."""
        st = self.storage
        parts = np.ascontiguousarray(parts, dtype=np.int64)
        lens = st.lengths[parts]
        total = int(lens.sum())
        if total == 0:
            return np.zeros(0, np.uint64), np.zeros(0, np.float32)
        # the probed rows' positions in the storage, partition after partition
        starts = np.repeat(st.offsets[parts] - (np.cumsum(lens) - lens), lens)
        where = starts + np.arange(total, dtype=np.int64)
        ids = st.row_ids[where]
        d = _score(self, st, q, parts, where, inner, total)
        if allow is not None:
            d[~allowed_mask(ids, allow)] = np.nan  # (NaN: never selected)
        sel = np.empty(min(want, total), np.int64)
        got = kt.topk_by_key(d, ids, len(sel), sel)
        if got < 0:
            raise InvalidInputError(f"top-k of {total} rows: bad size (k={want})")
        sel = sel[:got]
        return ids[sel], d[sel]

    def _refine(self, query, ids, k):
        if self.dataset is None:
            raise NotSupportedError("refine_factor needs the dataset: open the index "
                                    "with open_vector_index(ds, ...)")
        from lancenb.index.vector.rows import vectors_of  # the dataset's rows

        vecs, found = vectors_of(self.dataset, self.column, ids)
        ids = ids[found]
        q = np.asarray(query).reshape(-1).astype(
            np.uint8 if self.metric == "hamming" else np.float32)
        d = exact_distances(vecs, q, self.metric)
        sel = _smallest(d, ids, k)
        return ids[sel], d[sel].astype(np.float32, copy=False)


def _score(idx, st: _Storage, q, parts, where, inner, total) -> np.ndarray:
    """float32 distances of the probed rows (``where``: their storage positions)."""
    out = np.empty(total, np.float32)
    if st.kind == "FLAT":
        # a flat cosine index reports the cosine distance (the others: L2)
        if st.xt is None:
            return exact_distances(st.data[where], q, idx.metric)
        metric = kd.METRICS[idx.metric]
        status = in_two(lambda a, b, o: kscan.flat_scan(st.xt, st.offsets, st.lengths,
                                                        parts[a:b], q, metric, o),
                        st.lengths[parts], st.xt.itemsize * st.dim, out)
    elif st.kind == "PQ":
        tables = pqmod.query_tables(st.params, q, idx.centroids, parts, inner)
        nbits = int(st.params["nbits"])
        status = in_two(lambda a, b, o: kscan.pq_scan(tables[a:b], st.data, st.offsets,
                                                      st.lengths, parts[a:b], nbits, o),
                        st.lengths[parts], tables.shape[1], out)
        if inner == "dot":
            out -= np.float32(tables.shape[1] - 1)
    elif inner == "dot":  # SQ dot: dequantized rows (numpy, as before)
        codes = np.concatenate([st.rows(p) for p in parts.tolist()])
        return sqmod.partition_distances(st.params, codes, q, inner)
    else:
        lo, hi = sqmod.bounds_of(st.params)
        qc = sqmod.quantize(q, lo, hi)
        status = in_two(lambda a, b, o: kscan.sq_scan(st.xt, st.offsets, st.lengths,
                                                      parts[a:b], qc, o),
                        st.lengths[parts], st.dim, out)
        sqmod.scale_l2(out, lo, hi)
    if status != kscan.OK:
        raise CorruptFileError(f"vector index {idx.name!r}: its {st.kind} storage does not "
                               f"fit its partitions or a query of {len(q)} dimensions "
                               f"(status {status})")
    return out


def _smallest(d: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest distances, best first (ties by row id)."""
    n = len(d)
    if n > 4 * k:
        cand = np.argpartition(d, k - 1)[:k]
        cut = d[cand].max()
        cand = np.nonzero(d <= cut)[0]  # every tie of the k-th distance
    else:
        cand = np.arange(n)
    order = np.lexsort((ids[cand], d[cand]))
    return cand[order[:k]]


def storage_options_of(ds) -> dict | None:
    """The storage options ``ds`` was opened with (pylance's property of that name)."""
    opts = getattr(ds, "initial_storage_options", None)
    return opts() if callable(opts) else opts


def _index_entry(ds, index) -> dict:
    if isinstance(index, dict):
        return index
    for e in ds.list_indices():
        if e.get("name") == index or e.get("uuid") == index:
            return e
    raise InvalidInputError(f"dataset has no index {index!r}")


def open_vector_index(ds, index) -> VectorIndex:
    """Open a vector index of ``ds`` (an entry of ``ds.list_indices()``, or its name).

    Examples
    --------
    >>> idx = open_vector_index(ds, ds.list_indices()[0])  # doctest: +SKIP
    >>> ids, dists = idx.search(q, 10, nprobes=8)  # doctest: +SKIP
    """
    entry = _index_entry(ds, index)
    uuid = entry["uuid"]
    key = (ds.uri, uuid)
    use_cache = _caches(ds)
    hit = None
    if use_cache:
        with _cache_lock:
            hit = _cache.get(key)
            if hit is not None:
                _cache.move_to_end(key)
    if hit is None:
        hit = _load(ds, entry)
        size = hit.storage.nbytes() + hit.centroids.nbytes
        if use_cache and size <= _CACHE_BYTES:
            with _cache_lock:
                _cache[key] = hit
                while len(_cache) > _CACHE_SIZE or \
                        sum(v.storage.nbytes() + v.centroids.nbytes
                            for v in _cache.values()) > _CACHE_BYTES:
                    _cache.popitem(last=False)
    out = hit.bind(ds)
    out.name = entry.get("name", hit.name)
    out.fragment_ids = set(int(f) for f in entry.get("fragment_ids") or ())
    return out


class _SessionEntries:
    """What one session's index cache holds, as pylance counts it: the IVF model of an
    index and each of its partitions are entries of their own, entered on first use
    (a miss) and found again later (a hit); past the session's
    ``index_cache_size_bytes`` the least recently used leave, and at 0 nothing stays.
    Bookkeeping over the process cache above, which holds the decoded arrays."""

    def __init__(self):
        self.entries: OrderedDict = OrderedDict()
        self.used = self.hits = self.misses = 0
        self.lock = threading.Lock()

    def lookup(self, keys: list, sizes: list, limit: int) -> None:
        with self.lock:
            for key, size in zip(keys, sizes):
                if key in self.entries:
                    self.hits += 1
                    self.entries.move_to_end(key)
                    continue
                self.misses += 1
                if size > limit:
                    continue
                self.entries[key] = size
                self.used += size
                while self.used > limit:
                    self.used -= self.entries.popitem(last=False)[1]


_sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_sessions_lock = module_lock(globals(), "_sessions_lock")


def _session_of(ds):
    session = getattr(ds, "session", None)
    try:
        return session() if callable(session) else session
    except Exception:  # noqa: BLE001 - a dataset-like object without sessions
        return None


def _note_lookups(idx: VectorIndex, parts: np.ndarray) -> None:
    """Count a search of ``idx`` probing ``parts`` in its dataset's session cache."""
    session = _session_of(idx.dataset)
    if session is None:
        return
    with _sessions_lock:
        entries = _sessions.get(session)
        if entries is None:
            entries = _sessions[session] = _SessionEntries()
    st = idx.storage
    per_row = st.nbytes() / max(1, len(st.row_ids))
    uri = getattr(idx.dataset, "uri", "")
    keys = [(uri, idx.uuid, -1)] + [(uri, idx.uuid, int(p)) for p in parts]
    sizes = [idx.centroids.nbytes] + [int(per_row * st.lengths[p]) + 1 for p in parts]
    entries.lookup(keys, sizes, int(getattr(session, "index_cache_size_bytes", 1)))


def index_cache_hit_rate(session) -> float:
    """The share of index cache lookups of vector searches through ``session`` that
    found their entry (0.0 before any lookup), as pylance's
    ``index_cache_hit_rate()``."""
    with _sessions_lock:
        entries = _sessions.get(session)
    if entries is None:
        return 0.0
    with entries.lock:
        total = entries.hits + entries.misses
        return entries.hits / total if total else 0.0


def _caches(ds) -> bool:
    """Whether ``ds`` may use the index cache (its session's index cache is not 0)."""
    session = getattr(ds, "session", None)
    try:
        session = session() if callable(session) else session
        return int(getattr(session, "index_cache_size_bytes", 1)) > 0
    except Exception:  # noqa: BLE001 - a dataset-like object without sessions
        return True


def cached_indices() -> list[tuple[str, str]]:
    """The ``(dataset uri, index uuid)`` of the opened indices kept, oldest first."""
    with _cache_lock:
        return list(_cache)


def _load(ds, entry) -> VectorIndex:
    base = index_dir(ds, entry["uuid"])
    opts = storage_options_of(ds)
    path = f"{base}/{INDEX_FILE}"
    legacy = read_legacy_file(path, opts)  # pylance's index_file_version="Legacy"
    if legacy is not None:
        return _legacy_index(entry, legacy)
    r = LanceFileReader(path, opts)
    md = r.schema_full.metadata or {}
    info = _json_meta(md, INDEX_KEY, path)
    itype = str(info.get("type", "")).upper()
    metric = str(info.get("distance_type", "l2")).lower()
    if itype not in SUPPORTED_TYPES:
        raise NotSupportedError(f"vector index {entry.get('name')!r} is {itype}: lancenb "
                                f"searches {', '.join(SUPPORTED_TYPES)}")
    if metric not in METRICS and not (metric == "hamming" and itype == "IVF_FLAT"):
        raise NotSupportedError(f"vector index {entry.get('name')!r} uses the {metric!r} "
                                f"distance: lancenb searches {', '.join(METRICS)} (and "
                                f"hamming IVF_FLAT)")
    ivf = _ivf_of(r, path)
    if ivf.centroids is None or ivf.centroids.ndim != 2:
        raise CorruptFileError(f"{path}: the IVF model has no centroids")
    hnsw = itype.startswith("IVF_HNSW")
    storage = _read_storage(f"{base}/{AUX_FILE}", opts, len(ivf.centroids), hnsw)
    fields = entry.get("fields") or [""]
    out = VectorIndex(name=entry.get("name", ""), uuid=entry["uuid"], column=fields[0],
                      index_type=itype, metric=metric,
                      fragment_ids=entry.get("fragment_ids") or (),
                      centroids=ivf.centroids, storage=storage, loss=ivf.loss)
    if hnsw:
        from lancenb.index.vector.hnsw import Graphs

        out.graphs = Graphs.read(r, ivf, storage, path)
    return out


def _legacy_index(entry, li) -> VectorIndex:
    """A legacy IVF_PQ index (:class:`.ivfpb.LegacyIndex`), its codes kept sub-vector
    major per partition as a v3 index's."""
    if li.metric not in METRICS:
        raise NotSupportedError(f"legacy vector index {entry.get('name')!r} uses the "
                                f"{li.metric!r} distance: lancenb searches {METRICS}")
    offsets, lengths = li.ivf.offsets.astype(np.int64), li.ivf.lengths.astype(np.int64)
    codes = np.concatenate([pqmod.transpose_codes(li.codes[s:s + n]) for s, n in zip(
        offsets.tolist(), lengths.tolist())] + [np.zeros(0, np.uint8)])
    params = {"nbits": li.num_bits, "num_sub_vectors": li.num_sub_vectors,
              "dimension": li.dimension, "codebook": li.codebook}
    out = VectorIndex(name=entry.get("name", li.name), uuid=entry["uuid"],
                      column=(entry.get("fields") or [li.column])[0], index_type="IVF_PQ",
                      metric=li.metric, fragment_ids=entry.get("fragment_ids") or (),
                      centroids=li.ivf.centroids, loss=li.ivf.loss,
                      storage=_Storage("PQ", li.row_ids, offsets, lengths, codes, params))
    out.file_version = "Legacy"
    return out
