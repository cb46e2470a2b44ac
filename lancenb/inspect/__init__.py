"""See inside Lance files and datasets: :func:`inspect`, :func:`explain`, :func:`validate`.

Everything returned is plain data (dicts, lists, str, int, float, bool, None), ready
for ``json.dumps``.

* :func:`inspect` of a **file** parses the container itself (footer, offset tables,
  schema, every column's metadata), so it works for every version: 2.1/2.2 pages get
  their ``PageLayout`` (layout, full compression tree, chunk count, dictionary and
  repetition-index sizes); 2.0 pages their ``ArrayEncoding`` tree; 0.1 (legacy) files
  their batch offsets and page table. lancenb decodes only 2.1/2.2 pages, so only
  those get uncompressed sizes and explanations; the report's ``notes`` say so.
* **Explanations are reconstructed, not stored**: a Lance file does not record why a
  page was encoded the way it was. For each 2.1/2.2 page, :func:`inspect` decodes the
  page's rows, runs lancenb's strategy on them with the column's ``lance-encoding:*``
  metadata and a :class:`~lancenb.encodings.strategy.Trace`, and reports the trace
  and whether the re-run produced the stored description (``reproduced``). For files
  lancenb wrote it does (same rows per page, same strategy); for pylance's files a
  mismatch shows where the two strategies differ.
* :func:`explain` runs the strategy on in-memory data, cutting pages where
  ``LanceFileWriter`` would (its per-column buffer budget over the table's batches).
* :func:`validate` decodes every page of every column (and every deletion file of a
  dataset) and returns all problems found, each naming file, column, page and offset.

Modules: :mod:`~lancenb.inspect.files` (one file's container),
:mod:`~lancenb.inspect.datasets` (versions, manifests, fragments),
:mod:`~lancenb.inspect.explain` (the strategy re-run with a trace),
:mod:`~lancenb.inspect.validate` (decoding everything, collecting problems).
"""

from __future__ import annotations

from lancenb.inspect._format import FEATURE_FLAGS, PYLANCE14_FILE_VERSIONS
from lancenb.inspect.datasets import _inspect_dataset, _target_kind
from lancenb.inspect.explain import explain
from lancenb.inspect.files import _inspect_file
from lancenb.inspect.validate import validate

__all__ = ["inspect", "explain", "validate", "FEATURE_FLAGS", "PYLANCE14_FILE_VERSIONS"]


def inspect(path_or_uri, *, version=None, files: bool = False, explain: bool = True,
            storage_options: dict | None = None) -> dict:
    """What a Lance file or dataset holds, as plain JSON-ready data.

    Parameters
    ----------
    path_or_uri : str
        A ``.lance`` file or a dataset directory (anything fsspec resolves).
    version : int, optional
        Dataset version to detail (default: the latest); every version is listed.
    files : bool
        Datasets: also inspect every data file (``fragments[i].files[j].inspect``).
    explain : bool
        Files: re-run the strategy on each decoded 2.1/2.2 page and attach its trace
        (``columns[i].pages[j].explanation``); see the module docstring.
    storage_options : dict, optional
        Passed to fsspec.

    Returns
    -------
    dict
        ``kind`` (``"file"`` or ``"dataset"``) and what it holds: for a file its
        version, footer, schema, columns and pages; for a dataset its versions,
        manifest, fragments and tags. Only plain values, ready for ``json.dumps``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file import LanceFileWriter
    >>> with LanceFileWriter("memory://inspect-example.lance", version="2.1") as w:
    ...     w.write_batch(pa.table({"x": [1, 2, 3]}))
    >>> info = inspect("memory://inspect-example.lance")
    >>> info["kind"], info["version"], info["num_rows"], len(info["columns"])
    ('file', '2.1', 3, 1)
    """
    uri = str(path_or_uri)
    if _target_kind(uri, storage_options) == "dataset":
        return _inspect_dataset(uri, version=version, files=files,
                                explain=explain and files, storage_options=storage_options)
    return _inspect_file(uri, explain=explain, storage_options=storage_options)
