"""Vector helpers, as pylance's ``lance.vector``: :func:`vec_to_table`.

pylance's module also trains IVF/PQ models on GPUs (torch); those belong with the
vector indices and are not here.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError

__all__ = ["vec_to_table"]


def _vectors(values, ndim: int | None, check_ndim: bool) -> pa.FixedSizeListArray:
    values = list(values)
    if not values:
        raise InvalidInputError("vec_to_table: no vectors given")
    lengths = {len(v) for v in values} if check_ndim else {len(values[0])}
    if ndim is None:
        ndim = len(values[0])
    if check_ndim and lengths != {ndim}:
        bad = next(v for v in values if len(v) != ndim)
        raise InvalidInputError(f"vec_to_table: expected {ndim} dimensions but got "
                                f"{len(bad)} for {bad}")
    flat = np.asarray(values, dtype=np.float32).ravel()
    return pa.FixedSizeListArray.from_arrays(pa.array(flat), list_size=ndim)


def vec_to_table(data, names: str | Sequence[str] | None = None, ndim: int | None = None,
                 check_ndim: bool = True) -> pa.Table:
    """A table of float32 vectors (a ``fixed_size_list<float>`` column).

    Parameters
    ----------
    data : dict, list or numpy.ndarray
        A dict of ``{id: vector}`` (an ``id`` column of the keys, then the vectors), or
        a sequence of vectors / a 2-D array (one vector a row).
    names : str or list of str, optional
        The column names: two for a dict (default ``["id", "vector"]``), one
        otherwise (default ``"vector"``).
    ndim : int, optional
        The vectors' length (default: the first vector's).
    check_ndim : bool, default True
        Check that every vector has ``ndim`` values.

    Examples
    --------
    >>> vec_to_table({"a": [1, 2], "b": [3, 4]}).to_pydict()
    {'id': ['a', 'b'], 'vector': [[1.0, 2.0], [3.0, 4.0]]}
    >>> vec_to_table(np.eye(2), names="v").schema.field("v").type
    FixedSizeListType(fixed_size_list<item: float>[2])
    """
    if isinstance(data, dict):
        names = ["id", "vector"] if names is None else list(names)
        if len(names) != 2:
            raise InvalidInputError("vec_to_table: for a dict, names must be 2 column names "
                                    f"(id, vector), not {names!r}")
        arrays = [pa.array(list(data.keys())), _vectors(data.values(), ndim, check_ndim)]
    elif isinstance(data, (list, tuple, np.ndarray)):
        names = ["vector"] if names is None else [names] if isinstance(names, str) \
            else list(names)
        if len(names) != 1:
            raise InvalidInputError(f"vec_to_table: names must be one column name, not "
                                    f"{names!r}")
        arrays = [_vectors(data, ndim, check_ndim)]
    else:
        raise NotImplementedError(f"vec_to_table: data must be a dict, list or numpy array, "
                                  f"not {type(data).__name__}")
    return pa.Table.from_arrays(arrays, names=names)
