"""pylance's ``IvfModel`` and ``PqModel`` (``lance.indices``): trained IVF centroids and
PQ codebooks, saved and loaded as Lance files in pylance's layout (one column,
``centroids`` / ``codebook``, parameters in the schema metadata). Re-exported by
:mod:`lancenb.indices`; here so the index layer can return them.
"""

from __future__ import annotations

import numpy as np  # noqa: F401  (doctests)
import pyarrow as pa

from lancenb.file import LanceFileReader, LanceFileWriter

__all__ = ["IvfModel", "PqModel"]


class IvfModel:
    """Trained IVF centroids (``centroids``: fixed-size lists) and their distance type.

    Examples
    --------
    >>> c = pa.FixedSizeListArray.from_arrays(pa.array([0.0, 1.0, 2.0, 3.0]), 2)
    >>> IvfModel(c, "l2").num_partitions
    2
    """

    def __init__(self, centroids: pa.Array, distance_type: str):
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        """The number of partitions (centroids)."""
        return len(self.centroids)

    def save(self, uri: str, *, storage_options: dict | None = None) -> None:
        """Write the model as a Lance file (column ``centroids``)."""
        schema = pa.schema([pa.field("centroids", self.centroids.type)],
                           metadata={b"distance_type": self.distance_type.encode()})
        with LanceFileWriter(uri, schema, storage_options=storage_options) as w:
            w.write_batch(pa.table([self.centroids], names=["centroids"]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict | None = None) -> "IvfModel":
        """Read a model :meth:`save` (or pylance) wrote."""
        r = LanceFileReader(uri, storage_options=storage_options)
        meta = r.metadata().schema.metadata or {}
        return cls(r.read_column("centroids").combine_chunks(),
                   meta[b"distance_type"].decode())


class PqModel:
    """A trained PQ codebook: ``2**num_bits`` rows of ``dimension`` values whose bytes
    are each sub-vector's centroids in turn (pylance's layout).

    Examples
    --------
    >>> cb = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(256 * 4, np.float32)), 4)
    >>> PqModel(2, cb).dimension
    4
    """

    def __init__(self, num_subvectors: int, codebook: pa.FixedSizeListArray, *,
                 num_bits: int = 8):
        self.num_subvectors = num_subvectors
        self.num_bits = num_bits
        self.codebook = codebook

    @property
    def dimension(self) -> int:
        """The dimension of the vectors the model was trained on."""
        return self.codebook.type.list_size

    def save(self, uri: str, *, storage_options: dict | None = None) -> None:
        """Write the model as a Lance file (column ``codebook``)."""
        schema = pa.schema([pa.field("codebook", self.codebook.type)],
                           metadata={b"num_subvectors": str(self.num_subvectors).encode(),
                                     b"num_bits": str(self.num_bits).encode()})
        with LanceFileWriter(uri, schema, storage_options=storage_options) as w:
            w.write_batch(pa.table([self.codebook], names=["codebook"]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict | None = None) -> "PqModel":
        """Read a model :meth:`save` (or pylance) wrote."""
        r = LanceFileReader(uri, storage_options=storage_options)
        meta = r.metadata().schema.metadata or {}
        return cls(int(meta[b"num_subvectors"].decode()),
                   r.read_column("codebook").combine_chunks(),
                   num_bits=int(meta.get(b"num_bits", b"8").decode()))
