"""pylance's ``lance.indices``: train the pieces of an IVF_PQ index step by step.

:class:`IndicesBuilder` trains IVF centroids (:meth:`~IndicesBuilder.train_ivf`) and
a PQ codebook (:meth:`~IndicesBuilder.train_pq`) from a sample of a vector column;
:class:`IvfModel` and :class:`PqModel` hold them and save/load them as Lance files
(pylance's layout: one column ``centroids`` / ``codebook`` and the parameters in the
schema metadata), so either library reads the other's. They feed
``create_index(..., ivf_centroids=..., pq_codebook=...)``, or pylance's step-by-step
build: :meth:`~IndicesBuilder.transform_vectors` (row id, PQ code, partition of every
row to a Lance file), :meth:`~IndicesBuilder.shuffle_transformed_vectors` (sorted by
partition) and :meth:`~IndicesBuilder.load_shuffled_vectors` (the index files, then a
CreateIndex commit). Accelerator (GPU) training is not supported.
"""

from __future__ import annotations

import math
import warnings
from enum import Enum

import numpy as np
import pyarrow as pa

from lancenb.encodings.nptypes import numpy_dtype
from lancenb.errors import NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.index.config import IndexConfig
from lancenb.index.vector import pq as pqmod
from lancenb.index.vector.build import (
    as_matrix,
    commit_create_index,
    encode_pq,
    pq_params,
    sample_vectors,
    train_pq_codebook,
    write_index,
)
from lancenb.index.vector.kmeans import assign, train_kmeans
from lancenb.index.vector.models import IvfModel, PqModel

__all__ = ["IndicesBuilder", "IndexConfig", "IvfModel", "PqModel", "IndexFileVersion",
           "SupportedDistributedIndices"]


ROW_ID = "_rowid"
PART_ID = "__ivf_part_id"


def _normalised(x: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.einsum("ij,ij->i", x, x))
    n[n == 0] = 1
    return (x / n[:, None]).astype(np.float32)


def _metric_name(distance_type: str) -> str:
    return "l2" if distance_type in ("l2", "euclidean") else distance_type


def _read_transformed(dir_path: str, names: list[str]) -> pa.Table:
    tables = [LanceFileReader(f"{dir_path.rstrip('/')}/{n}").read_all().to_table()
              for n in names]
    return pa.concat_tables(tables) if tables else pa.table({})


class IndexFileVersion(str, Enum):
    LEGACY = "Legacy"
    V3 = "V3"


class SupportedDistributedIndices(str, Enum):
    BTREE = "BTREE"
    INVERTED = "INVERTED"
    IVF_FLAT = "IVF_FLAT"
    IVF_PQ = "IVF_PQ"
    IVF_SQ = "IVF_SQ"
    VECTOR = "VECTOR"


def _fsl(matrix: np.ndarray, value_type: pa.DataType) -> pa.FixedSizeListArray:
    flat = pa.array(np.ascontiguousarray(matrix).reshape(-1).astype(
        numpy_dtype(value_type)), value_type)
    return pa.FixedSizeListArray.from_arrays(flat, matrix.shape[-1])


def _matrix(arr) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    dim = arr.type.list_size
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False),
                      np.float32).reshape(-1, dim)


class IndicesBuilder:
    """Train IVF / PQ models of a vector column step by step (pylance's API).

    Examples
    --------
    >>> ivf = IndicesBuilder(ds, "vectors").train_ivf(16)  # doctest: +SKIP
    >>> pq = IndicesBuilder(ds, "vectors").train_pq(ivf, 8)  # doctest: +SKIP
    """

    def __init__(self, dataset, column: str):
        self.dataset = dataset
        self.column = self._normalize_column(column)
        vt = self._describe_vector_type(self.dataset.schema.field(self.column[0]).type)
        self.dimension, self._value_type = vt

    # -- training ------------------------------------------------------------------------
    def train_ivf(self, num_partitions=None, *, distance_type="l2", accelerator=None,
                  sample_rate: int = 256, max_iters: int = 50,
                  fragment_ids: list[int] | None = None) -> IvfModel:
        """k-means centroids of ``sample_rate * num_partitions`` sampled vectors
        (default ``round(sqrt(rows))`` partitions)."""
        num_rows = self._count_rows(fragment_ids)
        if num_partitions is None:
            num_partitions = round(math.sqrt(num_rows))
        self._verify_ivf_sample_rate(sample_rate, num_partitions, num_rows)
        distance_type = self._normalize_distance_type(distance_type)
        num_partitions = self._verify_ivf_params(num_partitions)
        if accelerator is not None:
            raise NotSupportedError("IVF training on an accelerator (torch) is not "
                                    "supported by lancenb")
        x = self._sample(sample_rate * num_partitions, fragment_ids, distance_type)
        metric = "dot" if distance_type == "dot" else "l2"
        centroids, _ = train_kmeans(x, min(num_partitions, max(len(x), 1)), metric=metric,
                                    max_iters=max_iters)
        return IvfModel(_fsl(centroids, self._float_type()), distance_type)

    def train_pq(self, ivf_model: IvfModel, num_subvectors=None, *, sample_rate: int = 256,
                 max_iters: int = 50, num_bits: int = 8,
                 fragment_ids: list[int] | None = None) -> PqModel:
        """PQ codebook of ``sample_rate * 2**num_bits`` sampled vectors' residuals to
        their nearest IVF centroid (the vectors themselves for dot)."""
        num_rows = self._count_rows(fragment_ids)
        num_subvectors = self._normalize_pq_params(num_subvectors, self.dimension)
        self._verify_pq_sample_rate(num_rows, sample_rate, num_bits)
        distance_type = ivf_model.distance_type
        x = self._sample(sample_rate * (1 << num_bits), fragment_ids, distance_type)
        if distance_type in ("l2", "euclidean", "cosine"):
            centroids = _matrix(ivf_model.centroids)
            labels, _ = assign(x, centroids, "l2")
            x = x - centroids[labels]
        cb = train_pq_codebook(x, num_subvectors, num_bits, max_iters, seed=42)
        return PqModel(num_subvectors, _fsl(cb.reshape(1 << num_bits, -1),
                                            self._float_type()), num_bits=num_bits)

    def prepare_global_ivf_pq(self, num_partitions, num_subvectors, *, distance_type="l2",
                              accelerator=None, sample_rate: int = 256,
                              max_iters: int = 50, num_bits: int = 8,
                              fragment_ids: list[int] | None = None) -> dict:
        """``{"ivf_centroids": ..., "pq_codebook": ...}`` trained as the two steps."""
        ivf = self.train_ivf(num_partitions, distance_type=distance_type,
                             accelerator=accelerator, sample_rate=sample_rate,
                             max_iters=max_iters, fragment_ids=fragment_ids)
        pq = self.train_pq(ivf, num_subvectors, sample_rate=sample_rate,
                           max_iters=max_iters, num_bits=num_bits, fragment_ids=fragment_ids)
        return {"ivf_centroids": ivf.centroids, "pq_codebook": pq.codebook}

    def assign_ivf_partitions(self, ivf_model, accelerator, *, output_uri=None):
        """Not supported: pylance computes it on an accelerator (torch)."""
        raise NotSupportedError("assign_ivf_partitions (accelerator partition "
                                "assignment) is not supported by lancenb")

    def transform_vectors(self, ivf: IvfModel, pq: PqModel, dest_uri: str,
                          fragments=None, partition_ds_uri: str | None = None) -> None:
        """Write a Lance file of each row's ``_rowid``, ``__pq_code`` (row-major) and
        ``__ivf_part_id``, for ``fragments`` (default all), unsorted."""
        if partition_ds_uri is not None:
            raise NotSupportedError("transform_vectors(partition_ds_uri=...) is not "
                                    "supported by lancenb")
        if fragments is None:
            fragments = self.dataset.get_fragments()
        elif len(fragments) == 0:
            raise ValueError("fragments must be a non-empty list or None")
        metric = ivf.distance_type
        centroids = _matrix(ivf.centroids)
        cb = _matrix(pq.codebook).reshape(pq.num_subvectors, 1 << pq.num_bits, -1)
        width = pq.num_subvectors if pq.num_bits == 8 else pq.num_subvectors // 2
        schema = pa.schema([pa.field(ROW_ID, pa.uint64()),
                            pa.field(pqmod.CODE_COLUMN, pa.list_(pa.uint8(), width)),
                            pa.field(PART_ID, pa.uint32())])
        with LanceFileWriter(dest_uri, schema) as w:
            for frag in fragments:
                for batch in frag.to_batches(columns=[self.column[0]], with_row_id=True):
                    x, keep = as_matrix(batch.column(self.column[0]))
                    ids = np.asarray(batch.column(ROW_ID).to_numpy(), np.uint64)[keep]
                    x = x[keep]
                    if metric == "cosine":
                        x = _normalised(x)
                    labels, _ = assign(x, centroids, "dot" if metric == "dot" else "l2")
                    key = x - centroids[labels] if pqmod.uses_residual(metric) else x
                    codes = encode_pq(cb, key, pq.num_bits)
                    w.write_batch(pa.table([
                        pa.array(ids, pa.uint64()),
                        pa.FixedSizeListArray.from_arrays(pa.array(codes.reshape(-1)), width),
                        pa.array(labels.astype(np.uint32), pa.uint32())], schema=schema))

    def shuffle_transformed_vectors(self, unsorted_filenames: list[str], dir_path: str,
                                    ivf: IvfModel,
                                    shuffle_output_root_filename: str | None = "sorted"
                                    ) -> list[str]:
        """Sort the rows of :meth:`transform_vectors`' files (in ``dir_path``) by
        partition into ``{root}_0.lance`` there; returns the file names."""
        if not isinstance(unsorted_filenames, list):
            raise ValueError("filenames must be a list of strings")
        table = _read_transformed(dir_path, unsorted_filenames)
        order = np.argsort(table.column(PART_ID).to_numpy(), kind="stable")
        name = f"{shuffle_output_root_filename or 'sorted'}_0.lance"
        with LanceFileWriter(f"{dir_path.rstrip('/')}/{name}", table.schema) as w:
            w.write_batch(table.take(pa.array(order)))
        return [name]

    def load_shuffled_vectors(self, filenames: list[str], dir_path: str, ivf: IvfModel,
                              pq: PqModel, index_name: str | None = None) -> None:
        """Build an IVF_PQ index from sorted transformed files and commit it (this
        builder's dataset moves to the new version)."""
        if not isinstance(filenames, list):
            raise ValueError("filenames must be a list of strings")
        table = _read_transformed(dir_path, filenames)
        ids = np.asarray(table.column(ROW_ID).to_numpy(), np.uint64)
        labels = np.asarray(table.column(PART_ID).to_numpy(), np.int64)
        code_col = table.column(pqmod.CODE_COLUMN).combine_chunks()
        codes = np.asarray(code_col.flatten().to_numpy(zero_copy_only=False),
                           np.uint8).reshape(len(table), -1)
        centroids = _matrix(ivf.centroids)
        cb = _matrix(pq.codebook).reshape(pq.num_subvectors, 1 << pq.num_bits, -1)
        ds = self.dataset
        col = self.column[0]
        name = index_name or f"{col}_idx"
        field_id = ds.lance_schema.field(col).id()
        frag_ids = sorted({int(f) for f in (ids >> np.uint64(32)).tolist()}) \
            if not getattr(ds, "stable_row_ids", False) else \
            [f.fragment_id for f in ds.get_fragments()]
        built = write_index(ds, field_id, "IVF_PQ", _metric_name(ivf.distance_type), name,
                            centroids, None, ids, labels, codes,
                            pq_params(pq.num_bits, pq.num_subvectors, self.dimension), cb,
                            num_bits=pq.num_bits, num_sub_vectors=pq.num_subvectors,
                            fragment_ids=frag_ids)
        existing = [e for e in ds.list_indices() if e["name"] == name]
        commit_create_index(ds, [built], existing, dataset_out=ds)

    # -- helpers (pylance's checks and messages) ----------------------------------------
    def _float_type(self) -> pa.DataType:
        return self._value_type if pa.types.is_floating(self._value_type) else pa.float32()

    def _sample(self, size: int, fragment_ids, distance_type: str) -> np.ndarray:
        x = sample_vectors(self.dataset, self.column[0], size, seed=42,
                           fragment_ids=fragment_ids)
        return _normalised(x) if distance_type == "cosine" else x

    def _count_rows(self, fragment_ids=None) -> int:
        if fragment_ids is None:
            return self.dataset.count_rows()
        total = 0
        for fid in fragment_ids:
            frag = self.dataset.get_fragment(fid)
            if frag is None:
                raise ValueError(f"Fragment id does not exist: {fid}")
            total += frag.count_rows()
        return total

    @staticmethod
    def _normalize_pq_params(num_subvectors, dimension: int) -> int:
        if num_subvectors is None:
            if dimension % 16 == 0:
                return dimension // 16
            if dimension % 8 == 0:
                return dimension // 8
            raise ValueError(f"vector dimension {dimension} is not divisible by 16 or 8. "
                             "PQ performance will be poor.  Cowardly refusing to create PQ "
                             "model.  Please specify num_subvectors manually.")
        if not isinstance(num_subvectors, int):
            raise ValueError("num_subvectors must be an int")
        if num_subvectors < 1:
            raise ValueError("num_subvectors must be greater than 0")
        if num_subvectors > dimension:
            raise ValueError("num_subvectors must be less than or equal to the dimension "
                             "of the vectors")
        if dimension % num_subvectors != 0:
            raise ValueError(f"dimension ({dimension}) must be divisible by num_subvectors "
                             f"({num_subvectors}) without remainder")
        return num_subvectors

    @staticmethod
    def _verify_base_sample_rate(sample_rate) -> None:
        if not isinstance(sample_rate, int) or sample_rate < 2:
            raise ValueError(f"The sample_rate must be an int greater than 1, got "
                             f"{sample_rate}")

    def _verify_pq_sample_rate(self, num_rows: int, sample_rate, num_bits: int = 8) -> None:
        self._verify_base_sample_rate(sample_rate)
        required = (2 ** num_bits) * sample_rate
        if required > num_rows:
            raise ValueError(f"There are not enough rows in the dataset to create PQ "
                             f"codebook with a sample rate of {sample_rate} and num_bits "
                             f"of {num_bits}.  {required} rows needed and there are "
                             f"{num_rows}")

    def _verify_ivf_sample_rate(self, sample_rate, num_partitions, num_rows: int) -> None:
        self._verify_base_sample_rate(sample_rate)
        if num_partitions * sample_rate > num_rows:
            raise ValueError(f"There are not enough rows in the dataset to create IVF "
                             f"centroids with {num_partitions} partitions and a sample "
                             f"rate of {sample_rate}. {sample_rate * num_partitions} rows "
                             f"needed and there are {num_rows}")

    @staticmethod
    def _verify_ivf_params(num_partitions) -> int:
        if num_partitions is None:
            raise ValueError("num_partitions and num_sub_vectors are required for IVF_PQ")
        if isinstance(num_partitions, float):
            warnings.warn("num_partitions is float, converting to int", stacklevel=3)
            return int(num_partitions)
        if not isinstance(num_partitions, (int, np.integer)):
            raise TypeError(f"num_partitions must be int, got {type(num_partitions)}")
        return int(num_partitions)

    @staticmethod
    def _normalize_distance_type(distance_type) -> str:
        if not isinstance(distance_type, str) or distance_type.lower() not in (
                "l2", "cosine", "euclidean", "dot", "hamming"):
            raise ValueError(f"Distance type {distance_type} not supported.")
        return distance_type.lower()

    def _normalize_column(self, column) -> list:
        columns = [column] if isinstance(column, str) else list(column)
        for c in columns:
            if c not in self.dataset.schema.names:
                raise KeyError(f"{c} not found in schema")
            t = self.dataset.schema.field(c).type
            vt = self._describe_vector_type(t)
            if vt is None:
                raise TypeError(f"Vector column {c} must be FixedSizeListArray, "
                                "list<FixedSizeList> (multivector), or 1-dimensional "
                                f"FixedShapeTensorArray, got {t}")
            if not (pa.types.is_floating(vt[1]) or pa.types.is_unsigned_integer(vt[1])):
                raise TypeError(f"Vector column {c} must have floating or unsigned integer "
                                f"value type, got {vt[1]}")
        return columns

    @staticmethod
    def _describe_vector_type(t):
        if pa.types.is_fixed_size_list(t):
            return t.list_size, t.value_type
        if pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
            return t.value_type.list_size, t.value_type.value_type
        if isinstance(t, pa.FixedShapeTensorType) and len(t.shape) == 1:
            return t.shape[0], t.value_type
        return None
