"""pylance's ``lance.dataset.VectorIndexReader``: an IVF index's partitions as tables.

``read_partition(p)`` gives the ``_rowid`` of every row in partition ``p`` and, with
``with_vector=True``, the stored vectors: PQ codes (``__pq_code``) exactly as the file
holds them, i.e. transposed within the partition, as pylance returns them; SQ codes
(``__sq_code``) or the flat vectors (``flat``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.index.vector import pq as pqmod
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.ivf import ROW_ID, SUPPORTED_TYPES, open_vector_index

__all__ = ["VectorIndexReader"]


class VectorIndexReader:
    """Read the partitions of the vector index ``index_name`` of ``dataset``.

    Examples
    --------
    >>> reader = VectorIndexReader(ds, "vector_idx")  # doctest: +SKIP
    >>> reader.read_partition(0).column_names  # doctest: +SKIP
    ['_rowid']
    """

    def __init__(self, dataset, index_name: str):
        entries = [e for e in dataset.list_indices() if e["name"] == index_name]
        if not entries:
            raise KeyError(f"Index not found: {index_name}")
        if entries[0]["type"] not in SUPPORTED_TYPES:
            raise ValueError(f"Index {index_name} is not vector index")
        self.dataset = dataset
        self.index_name = index_name
        self._index = open_vector_index(dataset, entries[0])

    def num_partitions(self) -> int:
        """The number of IVF partitions."""
        return self._index.num_partitions

    def read_partition(self, partition_id: int, *, with_vector: bool = False) -> pa.Table:
        """The rows of one partition: ``_rowid`` (and the stored vector)."""
        n_parts = self.num_partitions()
        if partition_id < 0 or partition_id >= n_parts:
            raise IndexError(f"Partition id {partition_id} is out of range, expected "
                             f"0 <= partition_id < {n_parts}")
        st = self._index.storage
        start, n = int(st.offsets[partition_id]), int(st.lengths[partition_id])
        cols = {ROW_ID: pa.array(st.row_ids[start:start + n], pa.uint64())}
        if with_vector:
            if st.kind == "PQ":
                m = int(st.params["num_sub_vectors"])
                width = m if int(st.params["nbits"]) == 8 else m // 2
                block = st.data[start * width:(start + n) * width]  # as stored
                cols[pqmod.CODE_COLUMN] = pa.FixedSizeListArray.from_arrays(
                    pa.array(block, pa.uint8()), width)
            else:
                data = st.rows(partition_id)
                name = sqmod.CODE_COLUMN if st.kind == "SQ" else "flat"
                vtype = pa.uint8() if st.kind == "SQ" else pa.float32()
                cols[name] = pa.FixedSizeListArray.from_arrays(
                    pa.array(np.ascontiguousarray(data).reshape(-1), vtype), data.shape[1])
        return pa.table(cols)
