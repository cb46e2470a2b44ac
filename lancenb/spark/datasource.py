"""The PySpark Python Data Source ``lancenb`` (pyspark >= 4.0; filters need 4.1).

::

    lancenb.spark.register(spark)
    df = spark.read.format("lancenb").load(uri)                  # latest version
    df = spark.read.format("lancenb").option("version", 3).load(uri)
    df.write.format("lancenb").mode("append").save(uri)          # or "overwrite"
    df.write.format("lancenb").mode("append").option("write_mode", "create").save(uri)

    # a table named in a catalog (lancenb.namespace) instead of a path
    df = (spark.read.format("lancenb").option("namespace", "dir")
          .option("namespace.root", "/data/catalog").option("table", "team.events").load())

Reads: one Spark partition per fragment (see :mod:`lancenb.spark.scan` for the
knobs), the version pinned when the reader is created (a DataFrame is a snapshot),
Arrow batches out, deletions applied. Spark's Python Data Source API has no column
pruning: the ``columns`` option (comma-separated) projects at the source.

Filter pushdown needs ``spark.sql.python.filterPushdown.enabled=true`` (default
false); a reader that implements ``pushFilters`` while it is false fails *every*
read, so the pushdown reader is chosen by the ``pushdown`` option, whose default
:func:`register` takes from the session's setting.

Writes: see :mod:`lancenb.spark.jobs`. Spark accepts only the ``append`` and
``overwrite`` save modes for Python sources; ``write_mode=create`` fails when the
dataset exists.

Options (case-insensitive; unknown ones are rejected):

=========================  ==========================================================
``version``                read this version or tag (alias ``versionAsOf``)
``asof``                   read the version current at this ISO time (``timestampAsOf``)
``columns``                comma-separated projection
``pushdown``               ``true``/``false``: claim filters Spark pushes
``batch_size``             rows per Arrow batch handed to Spark (65536)
``fragments_per_partition``  fragments packed into one read task (1)
``rows_per_partition``     split fragments with more live rows into ranges
``write_mode``             ``append`` / ``overwrite`` / ``create``
``max_rows_per_file``      rows per data file (1 Mi; alias ``max_row_per_file``)
``max_bytes_per_file``     bytes of input per data file
``data_storage_version``   2.0, 2.1 or 2.2 for new datasets (``file_format_version``)
``commit_retries``         commit attempts after losing a race (``max_retries``)
``namespace``              catalog implementation: ``dir``, ``rest`` or a class path
``namespace.<property>``   one property of that catalog (``namespace.root``, ``.uri``)
``table``                  the table's id in the catalog, parts joined by dots
                           (``table_id``); replaces the path
=========================  ==========================================================

A table named through a catalog is resolved on the driver: the catalog gives its
location and storage options (which go over the ``storage_options.*`` ones), and the
tasks read and write that location. A read or an append describes the table (an append to
a table the catalog does not know declares it, as a save to a new path creates a dataset);
``write_mode=create`` declares it; an overwrite describes it, or declares it if missing.
Spark SQL catalogs (``spark.sql.catalog.*``) are JVM classes, which a Python package
cannot provide: see docs/spark.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema

from lancenb.dataset import dataset
from lancenb.dataset.read.blob import output_field
from lancenb.errors import InvalidInputError
from lancenb.spark.jobs import (
    WriteJob,
    abort_job,
    commit_job,
    normalize_uri,
    plan_write,
    write_task,
)
from lancenb.spark.pushdown import to_sql
from lancenb.spark.scan import DEFAULT_BATCH_SIZE, ScanJob, plan_tasks, read_task
from lancenb.spark.types import stored_schema, to_spark_schema

__all__ = ["LanceNbDataSource", "LanceNbCommitMessage", "FORMAT"]

FORMAT = "lancenb"

_ALIASES = {"versionasof": "version", "timestampasof": "asof", "timestamp": "asof",
            "max_row_per_file": "max_rows_per_file", "file_format_version":
            "data_storage_version", "max_retries": "commit_retries",
            "table_id": "table", "namespace_impl": "namespace"}
_READ = {"version", "asof", "columns", "pushdown", "batch_size", "fragments_per_partition",
         "rows_per_partition"}
_WRITE = {"write_mode", "max_rows_per_file", "max_bytes_per_file", "data_storage_version",
          "commit_retries"}
# fault injection used by lancenb's own tests
_TESTING = {"_test_fail_partition", "_test_fail_commit", "_test_fail_after_commit"}
_KNOWN = _READ | _WRITE | _TESTING | {"path", "namespace", "table"}
# ``.option("storage_options.aws_endpoint", url)``: one storage option each (pylance's
# or fsspec's names; see lancenb.io.options); the driver and every task get them all
STORAGE_PREFIX = "storage_options."
# ``.option("namespace.root", "/data/catalog")``: one property of the catalog each
NAMESPACE_PREFIX = "namespace."


def _options(raw) -> dict:
    opts = {}
    storage = {}
    catalog = {}
    for k, v in dict(raw).items():
        if k.lower().startswith(STORAGE_PREFIX):
            storage[k[len(STORAGE_PREFIX):].lower()] = v
            continue
        if k.lower().startswith(NAMESPACE_PREFIX):
            # property names are the catalog's own (case kept: Spark lower-cases them)
            catalog[k[len(NAMESPACE_PREFIX):]] = v
            continue
        key = _ALIASES.get(k.lower(), k.lower())
        if key not in _KNOWN:
            raise InvalidInputError(f"unknown lancenb option {k!r}; known options: "
                                    f"{sorted(_KNOWN - _TESTING)}")
        opts[key] = v
    opts["storage_options"] = storage or None
    opts["namespace_properties"] = catalog
    return opts


def _int(opts, key, default=None):
    v = opts.get(key)
    if v is None:
        return default
    try:
        return int(v)
    except ValueError:
        raise InvalidInputError(f"option {key!r} must be an integer, not {v!r}") from None


def _bool(opts, key, default):
    v = opts.get(key)
    if v is None:
        return default
    if str(v).lower() in ("true", "1", "yes"):
        return True
    if str(v).lower() in ("false", "0", "no"):
        return False
    raise InvalidInputError(f"option {key!r} must be true or false, not {v!r}")


def _path(opts) -> str:
    p = opts.get("path")
    if not p:
        raise InvalidInputError("no dataset path: use .load(uri) / .save(uri), "
                                ".option('path', uri), or the namespace and table options")
    return normalize_uri(p)


def _table_id(opts) -> list[str]:
    parts = [p.strip() for p in str(opts["table"]).split(".")]
    if not all(parts):
        raise InvalidInputError(f"table option {opts['table']!r}: give the table's id in "
                                "the catalog, its parts joined by dots (team.events)")
    return parts


def _resolve(opts, mode: str | None = None) -> None:
    """Replace a (namespace, table) pair by the table's location and storage options,
    in place, asking the catalog once on the driver. ``mode`` is the write mode (None
    for a read)."""
    if "table" not in opts and "namespace" not in opts:
        if opts["namespace_properties"]:
            raise InvalidInputError("namespace.* options need the namespace option (dir, "
                                    "rest or a class path) and the table option")
        return
    if "table" not in opts or "namespace" not in opts:
        raise InvalidInputError("a table in a catalog needs both the namespace option "
                                "(dir, rest or a class path) and the table option")
    if opts.get("path"):
        raise InvalidInputError("give a path or a catalog table (namespace and table "
                                "options), not both")
    from lancenb.dataset.catalog import namespace_table
    from lancenb.namespace import connect

    client = connect(str(opts["namespace"]), dict(opts["namespace_properties"]))
    table_id = _table_id(opts)
    kwargs = {"namespace_client": client, "table_id": table_id}
    if mode in ("create", None):
        location, storage = namespace_table(kwargs, None, opts["storage_options"], mode)
    else:
        try:
            location, storage = namespace_table(dict(kwargs), None, opts["storage_options"])
        except _table_not_found():
            # append / overwrite to a table the catalog does not know: declare it, as a
            # save to a new path creates a dataset
            location, storage = namespace_table(kwargs, None, opts["storage_options"],
                                                "create")
    opts["path"], opts["storage_options"] = location, storage or None
    del opts["table"], opts["namespace"]
    opts["namespace_properties"] = {}


def _table_not_found() -> type[Exception]:
    # the spec's class: what any catalog implementation raises for an unknown table
    from lance_namespace import TableNotFoundError

    return TableNotFoundError


class LanceNbDataSource(DataSource):
    """``spark.read.format("lancenb")`` / ``df.write.format("lancenb")``."""

    #: default of the ``pushdown`` option; :func:`register` makes a subclass with the
    #: session's ``spark.sql.python.filterPushdown.enabled``
    pushdown_default = False

    def __init__(self, options):
        super().__init__(options)
        self.opts = _options(options)

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("lancenb")``."""
        return FORMAT

    # -- read ------------------------------------------------------------------
    def _open(self):
        o = self.opts
        if "version" in o and "asof" in o:
            raise InvalidInputError("pass the version option or asof, not both")
        _resolve(o)
        v = o.get("version")
        v = int(v) if v is not None and str(v).isdigit() else v
        return dataset(_path(o), v, asof=o.get("asof"), storage_options=o["storage_options"])

    def _columns(self, schema) -> list[str]:
        cols = self.opts.get("columns")
        if cols is None:
            return list(schema.names)
        names = [c.strip() for c in cols.split(",") if c.strip()]
        bad = [c for c in names if c not in schema.names]
        if bad or not names:
            raise InvalidInputError(f"columns option: no column(s) {bad or cols!r} in the "
                                    f"dataset; it has {schema.names}")
        return names

    def schema(self):
        """The dataset's schema as a Spark schema (blob columns as binary)."""
        s = stored_schema(self._open().schema)
        # blob columns reach Spark as their bytes (scan.py reads them "all_binary")
        return to_spark_schema(pa.schema([output_field(s.field(c), "all_binary")
                                          for c in self._columns(s)]))

    def reader(self, schema):
        """The reader of a scan (fragments split into partitions; read options checked)."""
        for k in self.opts:
            if k in _WRITE:
                raise InvalidInputError(f"option {k!r} is for writes, not reads")
        ds = self._open()  # pins the version for this query (a DataFrame is a snapshot)
        stored = stored_schema(ds.schema)
        names = [f.name for f in schema.fields]
        missing = [n for n in names if n not in stored.names]
        if missing:
            raise InvalidInputError(f"dataset {ds.uri!r} version {ds.version} has no column(s) "
                                    f"{missing}")
        job = ScanJob(uri=ds.uri, version=ds.version, columns=names,
                      target=to_arrow_schema(schema, timezone="UTC"),
                      batch_size=_int(self.opts, "batch_size", DEFAULT_BATCH_SIZE),
                      storage_options=self.opts["storage_options"])
        if job.batch_size <= 0:
            raise InvalidInputError("batch_size must be positive")
        tasks = plan_tasks(ds, fragments_per_partition=_int(self.opts,
                                                            "fragments_per_partition", 1),
                           rows_per_partition=_int(self.opts, "rows_per_partition"))
        cls = _PushdownReader if _bool(self.opts, "pushdown", self.pushdown_default) \
            else _Reader
        return cls(job, tasks, stored)

    # -- write -----------------------------------------------------------------
    def writer(self, schema, overwrite: bool):
        """The writer of a save (write options checked; ``overwrite`` from the save mode)."""
        for k in self.opts:
            if k in _READ:
                raise InvalidInputError(f"option {k!r} is for reads, not writes")
        o = self.opts
        mode = "overwrite" if overwrite else str(o.get("write_mode", "append")).lower()
        _resolve(o, mode)
        job = plan_write(_path(o), schema, mode=mode,
                         max_rows_per_file=_int(o, "max_rows_per_file"),
                         max_bytes_per_file=_int(o, "max_bytes_per_file"),
                         data_storage_version=o.get("data_storage_version"),
                         max_retries=_int(o, "commit_retries"),
                         storage_options=o["storage_options"])
        job.fail_partition = _int(o, "_test_fail_partition")
        job.fail_commit = _bool(o, "_test_fail_commit", False)
        job.fail_after_commit = _bool(o, "_test_fail_after_commit", False)
        return _Writer(job)


class _Reader(DataSourceReader):
    def __init__(self, job: ScanJob, tasks, lance_schema):
        self.job = job
        self.tasks = tasks
        self.lance_schema = lance_schema

    def partitions(self):
        return [InputPartition(t) for t in self.tasks]

    def read(self, partition):
        # Spark reads one InputPartition(None) when partitions() is empty (G8)
        yield from read_task(self.job, partition.value or [])


class _PushdownReader(_Reader):
    def pushFilters(self, filters):
        claimed, rest = to_sql(list(filters), self.lance_schema)
        if claimed:
            sql = " AND ".join(f"({c})" for c in claimed)
            self.job.filter = f"({self.job.filter}) AND {sql}" if self.job.filter else sql
        return iter(rest)


@dataclass
class LanceNbCommitMessage(WriterCommitMessage):
    """What one write task reports: its fragments (serialised) and files."""

    fragments: list = field(default_factory=list)
    files: list = field(default_factory=list)


class _Writer(DataSourceArrowWriter):
    def __init__(self, job: WriteJob):
        self.job = job

    def write(self, iterator):
        ctx = TaskContext.get()
        task = f"{ctx.partitionId()}-{ctx.attemptNumber()}" if ctx is not None else "x-0"
        frags, files = write_task(self.job, iterator, task=task)
        return LanceNbCommitMessage(frags, files)

    def commit(self, messages):
        frags = [f for m in messages if m is not None for f in m.fragments]
        commit_job(self.job, frags)

    def abort(self, messages):
        files = [p for m in messages if m is not None for p in m.files]
        abort_job(self.job, files)
