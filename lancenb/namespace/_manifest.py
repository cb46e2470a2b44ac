"""The ``__manifest`` table of a directory namespace: one Lance dataset under the root
that lists every table and child namespace, as pylance's ``DirectoryNamespace`` keeps it.

Schema (pylance's, field for field)::

    object_id     string not null   "ns1$ns2$name": the id's parts joined by "$"
                                    (unenforced primary key)
    object_type   string not null   "table" or "namespace"
    location      string            a table's directory, relative to the root
                                    ("name.lance" or "<8 hex>_<object_id>")
    metadata      string            a namespace's properties as a JSON object
    base_objects  list<string>      (views; unused here, null)

Example: after ``create_namespace(["a"])`` and a table ``["a", "t"]`` it holds
``("a", "namespace", null, null, null)`` and ``("a$t", "table", "1f3e09ab_a$t", null,
null)``. Rows are added by a merge-insert keyed on ``object_id`` (an id already present
inserts nothing, which is how a duplicate is detected, and two writers racing on one id
cannot both add it) and removed by a delete, so either library's writes are seen by the
other. Every call opens the latest version: other processes write the table too.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lancenb.dataset import LanceDataset, write_dataset
from lancenb.dataset.operations import LanceOperation
from lancenb.errors import CommitConflictError, DatasetExistsError, DatasetNotFoundError

DELIMITER = "$"
TABLE = "table"
NAMESPACE = "namespace"

SCHEMA = pa.schema([
    pa.field("object_id", pa.string(), nullable=False,
             metadata={"lance-schema:unenforced-primary-key:position": "0"}),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
])


def _quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


class ManifestTable:
    """Reads and writes of one namespace root's ``__manifest`` dataset."""

    def __init__(self, uri: str, storage_options: dict | None):
        self.uri = uri
        self.storage_options = storage_options

    def _open(self) -> LanceDataset | None:
        try:
            return LanceDataset(self.uri, storage_options=self.storage_options)
        except DatasetNotFoundError:
            return None

    def _open_or_create(self) -> LanceDataset:
        ds = self._open()
        if ds is not None:
            return ds
        try:
            return write_dataset(SCHEMA.empty_table(), self.uri, mode="create",
                                 storage_options=self.storage_options)
        except (DatasetExistsError, CommitConflictError):  # another writer created it first
            return LanceDataset(self.uri, storage_options=self.storage_options)

    def rows(self) -> pa.Table:
        """Every row (the table is small: one row per table or namespace)."""
        ds = self._open()
        if ds is None:
            return SCHEMA.empty_table()
        return ds.to_table(columns=["object_id", "object_type", "location", "metadata"])

    def find(self, object_id: str, object_type: str | None = None) -> dict | None:
        """The row of ``object_id`` (of ``object_type`` if given), or None."""
        rows = self.rows()
        mask = pc.equal(rows["object_id"], object_id)
        if object_type is not None:
            mask = pc.and_(mask, pc.equal(rows["object_type"], object_type))
        found = rows.filter(mask).to_pylist()
        return found[0] if found else None

    def children(self, prefix: list[str], object_type: str) -> list[str]:
        """Names of the ``object_type`` objects directly under namespace ``prefix``."""
        rows = self.rows()
        ids = rows.filter(pc.equal(rows["object_type"], object_type))["object_id"]
        if prefix:
            head = DELIMITER.join(prefix) + DELIMITER
            ids = ids.filter(pc.starts_with(ids, head))
            ids = pc.utf8_slice_codeunits(ids, len(head))
        ids = ids.filter(pc.invert(pc.match_substring(ids, DELIMITER)))
        return ids.to_pylist()

    def descendants(self, prefix: list[str]) -> int:
        """How many objects lie anywhere under namespace ``prefix``."""
        ids = self.rows()["object_id"]
        return pc.sum(pc.starts_with(ids, DELIMITER.join(prefix) + DELIMITER)).as_py() or 0

    def locations(self) -> set[str]:
        """The locations of every table."""
        rows = self.rows()
        locs = rows.filter(pc.equal(rows["object_type"], TABLE))["location"]
        return {loc for loc in locs.to_pylist() if loc is not None}

    def insert(self, object_id: str, object_type: str, *, location: str | None = None,
               metadata: str | None = None) -> bool:
        """Add a row; False (nothing written) when ``object_id`` is present already."""
        row = pa.table({"object_id": [object_id], "object_type": [object_type],
                        "location": [location], "metadata": [metadata],
                        "base_objects": pa.nulls(1, SCHEMA.field("base_objects").type)},
                       schema=SCHEMA)
        ds = self._open_or_create()
        stats = ds.merge_insert("object_id").when_not_matched_insert_all().execute(row)
        return stats["num_inserted_rows"] == 1 and self._first(ds, object_id)

    def _first(self, ds: LanceDataset, object_id: str) -> bool:
        """Whether the row just committed (as ``ds.version``) is the only one of
        ``object_id`` in that version. A merge-insert of the same id racing this one may
        have been committed first and this one rebased over it (lancenb rebases
        concurrent inserts like appends): then the later commit takes its own row out
        again and reports the id taken, so the earliest commit wins."""
        pred = f"object_id = {_quote(object_id)}"
        if ds.count_rows(pred) <= 1:
            return True
        before = {f.fragment_id for f in ds.checkout_version(ds.version - 1).get_fragments()}
        mine = [f.fragment_id for f in ds.get_fragments() if f.fragment_id not in before]
        LanceDataset.commit(self.uri, LanceOperation.Delete([], mine, pred),
                            read_version=ds.version, storage_options=self.storage_options)
        return False

    def delete(self, object_id: str) -> None:
        """Remove the row of ``object_id`` (none: nothing happens)."""
        ds = self._open()
        if ds is not None:
            ds.delete(f"object_id = {_quote(object_id)}")
