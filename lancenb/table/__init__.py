"""The Lance table format, without the dataset API.

A dataset on storage is a folder of manifests (``_versions/``), data files (``data/``),
deletion files (``_deletions/``), transactions (``_transactions/``), index files
(``_indices/``) and refs (``_refs/``). This package reads and writes those pieces:

- ``manifest.py``: a manifest file (schema, fragments, config, index section offset);
- ``fragments.py``: fragment metadata (``DataFile``, ``DeletionFile``, ``FragmentMetadata``);
- ``deletion.py``: deletion files (Arrow IPC arrays and roaring bitmaps);
- ``rowids.py``: stable row ids and row version sequences;
- ``versions.py``, ``hint.py``: version discovery, ``_latest_version_hint.json``;
- ``tags.py``: refs (tags);
- ``transaction.py``: a transaction and the manifest it produces from its base;
- ``conflicts.py``: whether two concurrent transactions can both commit;
- ``commit.py``: the commit protocol (put-if-absent, rename, external manifest stores
  from ``external.py``), retries and conflict rebasing;
- ``indices.py``: the manifest's index section (the indices a version lists).
"""
