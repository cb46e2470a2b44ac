"""Fragments for distributed work: pylance's ``lance.fragment`` API.

Workers (Dask, Ray, ``multiprocessing``, Spark tasks) write data files and return
their :class:`FragmentMetadata`; one driver commits them all with a single
:class:`lancenb.LanceOperation` through :meth:`lancenb.LanceDataset.commit`::

    import lancenb as lance

    def work(part):                      # on a worker
        return lance.fragment.write_fragments(part, uri)

    frags = [f for fs in map(work, parts) for f in fs]
    ds = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags),
                                   read_version=ds.version)

Fragments of an opened dataset (``ds.get_fragments()``) read on their own
(``to_table``, ``to_batches``, ``scanner``, ``take``, ``count_rows``, ``head``) and
pickle as the dataset's URI, version, storage options and the fragment id, so they
can be sent to workers. :class:`FragmentMetadata` JSON (``to_json``/``from_json``)
is pylance's, byte for byte in meaning: either library commits the other's.
"""

from __future__ import annotations

from lancenb.dataset.fragment import LanceFragment
from lancenb.dataset.fragment_columns import FragmentSession
from lancenb.dataset.write.insert import DEFAULT_MAX_BYTES_PER_FILE
from lancenb.dataset.write.insert import write_fragments as _write_fragments
from lancenb.table.fragments import (
    DataFile,
    DeletionFile,
    FragmentMetadata,
    RowDatasetVersionMeta,
    RowIdMeta,
)

__all__ = ["LanceFragment", "FragmentMetadata", "DataFile", "DeletionFile", "RowIdMeta",
           "RowDatasetVersionMeta", "FragmentSession", "write_fragments",
           "DEFAULT_MAX_BYTES_PER_FILE"]


def write_fragments(data, dataset_uri, schema=None, *, return_transaction: bool = False,
                    mode: str = "append", max_rows_per_file: int = 1024 * 1024,
                    max_rows_per_group: int | None = 1024, max_bytes_per_file: int | None = None,
                    progress=None, data_storage_version: str | None = None,
                    use_legacy_format=None, storage_options=None,
                    enable_stable_row_ids: bool = False, **kwargs):
    """Write ``data`` as the data files of new fragments, without committing them.

    Parameters
    ----------
    data : pyarrow Table, RecordBatchReader, iterable of RecordBatches, or DataFrame
        The rows to write (streamed).
    dataset_uri : str, Path or LanceDataset
        The dataset the fragments are for (it need not exist yet).
    schema : pyarrow.Schema, optional
        The data's schema, if it is to be cast.
    return_transaction : bool, default False
        Return a :class:`lancenb.dataset.operations.Transaction` (an ``Append`` when
        appending to an existing dataset, else an ``Overwrite``) instead of the list.
    mode : {"append", "create", "overwrite"}, default "append"
        ``"append"`` checks the data against the existing dataset's schema and
        uses its field ids and file version; the others assign field ids afresh.
    max_rows_per_file, max_bytes_per_file : int
        When a new data file (fragment) starts.
    data_storage_version : str, optional
        File version of new data files (default 2.2, as pylance 14; appends keep the
        dataset's).
    storage_options : dict, optional
        Object-store options (pylance's or fsspec's names).

    target_bases, target_all_bases : optional
        Registered base paths the data files go to in turn (as for ``write_dataset``).

    Other pylance options (``max_rows_per_group``, ``progress``,
    ``enable_stable_row_ids``: row ids are assigned at commit) are accepted and have
    no effect.

    Returns
    -------
    list of FragmentMetadata, or Transaction
        Fragment ids are 0: the commit assigns them.

    Examples
    --------
    >>> frags = write_fragments(pa.table({"a": [1, 2]}), "/tmp/ds")  # doctest: +SKIP
    >>> LanceDataset.commit("/tmp/ds", LanceOperation.Overwrite(schema, frags))  # doctest: +SKIP
    """
    return _write_fragments(data, dataset_uri, schema, return_transaction=return_transaction,
                            mode=mode, max_rows_per_file=max_rows_per_file,
                            max_rows_per_group=max_rows_per_group,
                            max_bytes_per_file=max_bytes_per_file, progress=progress,
                            data_storage_version=data_storage_version,
                            use_legacy_format=use_legacy_format, storage_options=storage_options,
                            enable_stable_row_ids=enable_stable_row_ids, **kwargs)
