"""lancenb: the Lance columnar file and table format in Python, with Numba kernels.

``import lancenb as lance`` gives a pylance-compatible subset: datasets
(:func:`write_dataset`, :func:`dataset`, :class:`LanceDataset`) and the file API in
:mod:`lancenb.file`.
"""

import importlib as _importlib
import importlib.util  # noqa: F401
import os as _os
import sys as _sys
import types as _types

from lancenb import errors
from lancenb._version import __version__
from lancenb.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
)

# Everything else is imported on first use (PEP 562), so ``import lancenb`` costs
# little more than numpy: the dataset layer pulls in pyarrow.dataset (and through it
# pandas), the file layer numba and the kernels. public name -> (module, attribute;
# None: the module itself)
_LAZY = {
    "file": ("lancenb.file", None),
    "fragment": ("lancenb.fragment", None),
    "dataset": ("lancenb.dataset", "dataset"),
    "write_dataset": ("lancenb.dataset", "write_dataset"),
    "LanceDataset": ("lancenb.dataset", "LanceDataset"),
    "LanceFragment": ("lancenb.dataset", "LanceFragment"),
    "LanceScanner": ("lancenb.dataset", "LanceScanner"),
    "BatchUDF": ("lancenb.dataset.write.evolution", "BatchUDF"),
    "batch_udf": ("lancenb.dataset.write.evolution", "batch_udf"),
    "LanceOperation": ("lancenb.dataset.operations", "LanceOperation"),
    "Transaction": ("lancenb.dataset.operations", "Transaction"),
    "FragmentMetadata": ("lancenb.table.fragments", "FragmentMetadata"),
    "MergeInsertBuilder": ("lancenb.dataset.write.merge_insert", "MergeInsertBuilder"),
    "CleanupStats": ("lancenb.dataset.write.optimize", "CleanupStats"),
    "Session": ("lancenb.dataset.session", "Session"),
    "DataStatistics": ("lancenb.dataset.descriptions", "DataStatistics"),
    "FieldStatistics": ("lancenb.dataset.descriptions", "FieldStatistics"),
    "DatasetBasePath": ("lancenb.dataset.descriptions", "DatasetBasePath"),
    "CleanupExplanation": ("lancenb.dataset.descriptions", "CleanupExplanation"),
    "CleanupCandidateFile": ("lancenb.dataset.descriptions", "CleanupCandidateFile"),
    "BlobFile": ("lancenb.dataset.read.blob", "BlobFile"),
    "BlobColumn": ("lancenb.dataset.read.blob", "BlobColumn"),
    "schema_to_json": ("lancenb.file.schema_json", "schema_to_json"),
    "json_to_schema": ("lancenb.file.schema_json", "json_to_schema"),
    "sanitize_ts": ("lancenb.util", "sanitize_ts"),
    "set_logger": ("lancenb.log", "set_logger"),
    "simd_info": ("lancenb.tools.runtime", "simd_info"),
    "iops_counter": ("lancenb.tools.runtime", "iops_counter"),
    "ScanStatistics": ("lancenb.dataset.descriptions", "ScanStatistics"),
    "bytes_read_counter": ("lancenb.tools.runtime", "bytes_read_counter"),
    "LanceFileReader": ("lancenb.file", "LanceFileReader"),
    "LanceFileWriter": ("lancenb.file", "LanceFileWriter"),
    "inspect": ("lancenb.inspect", "inspect"),
    "explain": ("lancenb.inspect", "explain"),
    "validate": ("lancenb.inspect", "validate"),
    "warmup": ("lancenb.tools.warmup", "warmup"),
    "IndexProgress": ("lancenb.progress", "IndexProgress"),
    "tokenize": ("lancenb.index.fts.query", "tokenize"),
    "FtsToken": ("lancenb.index.fts.query", "FtsToken"),
}

TYPE_CHECKING = False  # (not typing's: importing typing would cost more than lancenb)
if TYPE_CHECKING:
    # what type checkers see: the names of _LAZY, imported from the same places (the
    # table stays the runtime truth; tests/test_public_modules.py checks they agree)
    from lancenb import file as file
    from lancenb import fragment as fragment
    from lancenb.dataset import LanceDataset as LanceDataset
    from lancenb.dataset import LanceFragment as LanceFragment
    from lancenb.dataset import LanceScanner as LanceScanner
    from lancenb.dataset import dataset as dataset
    from lancenb.dataset import write_dataset as write_dataset
    from lancenb.dataset.descriptions import CleanupCandidateFile as CleanupCandidateFile
    from lancenb.dataset.descriptions import CleanupExplanation as CleanupExplanation
    from lancenb.dataset.descriptions import DatasetBasePath as DatasetBasePath
    from lancenb.dataset.descriptions import DataStatistics as DataStatistics
    from lancenb.dataset.descriptions import FieldStatistics as FieldStatistics
    from lancenb.dataset.descriptions import ScanStatistics as ScanStatistics
    from lancenb.dataset.operations import LanceOperation as LanceOperation
    from lancenb.dataset.operations import Transaction as Transaction
    from lancenb.dataset.read.blob import BlobColumn as BlobColumn
    from lancenb.dataset.read.blob import BlobFile as BlobFile
    from lancenb.dataset.session import Session as Session
    from lancenb.dataset.write.evolution import BatchUDF as BatchUDF
    from lancenb.dataset.write.evolution import batch_udf as batch_udf
    from lancenb.dataset.write.merge_insert import MergeInsertBuilder as MergeInsertBuilder
    from lancenb.dataset.write.optimize import CleanupStats as CleanupStats
    from lancenb.file import LanceFileReader as LanceFileReader
    from lancenb.file import LanceFileWriter as LanceFileWriter
    from lancenb.file.schema_json import json_to_schema as json_to_schema
    from lancenb.file.schema_json import schema_to_json as schema_to_json
    from lancenb.index.fts.query import FtsToken as FtsToken
    from lancenb.index.fts.query import tokenize as tokenize
    from lancenb.inspect import explain as explain
    from lancenb.inspect import inspect as inspect
    from lancenb.inspect import validate as validate
    from lancenb.log import set_logger as set_logger
    from lancenb.progress import IndexProgress as IndexProgress
    from lancenb.table.fragments import FragmentMetadata as FragmentMetadata
    from lancenb.tools.runtime import bytes_read_counter as bytes_read_counter
    from lancenb.tools.runtime import iops_counter as iops_counter
    from lancenb.tools.runtime import simd_info as simd_info
    from lancenb.tools.warmup import warmup as warmup
    from lancenb.util import sanitize_ts as sanitize_ts

if _os.environ.get("LANCE_LOG") is not None:
    # pylance turns its core's logging on at import when LANCE_LOG is set; so does
    # lancenb (lancenb.log: stderr or LANCE_LOG_FILE)
    from lancenb.log import configure_from_env as _configure_log

    _configure_log()


def __getattr__(name):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        # any other subpackage (lancenb.io, lancenb.encodings, ...), as when they were
        # all imported eagerly
        if name.startswith("_") or _importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module 'lancenb' has no attribute {name!r}") from None
        module, attr = f"{__name__}.{name}", None
    value = _importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    setattr(_sys.modules[__name__], name, value)
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _Package(_types.ModuleType):
    """The ``lancenb`` module: like pylance, ``lancenb.dataset`` and ``lancenb.inspect``
    are functions although subpackages of those names exist; importing a subpackage
    binds its name in the parent, and here that binding keeps the function."""

    def __setattr__(self, name, value):
        if name in ("dataset", "inspect", "warmup") and isinstance(value, _types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __reduce__(self):
        # by name, as pickle treats plain modules: cloudpickle ships functions that use
        # ``lancenb`` (defined in __main__ or a notebook) to Dask/Ray workers by value,
        # with their globals, and a module subclass would not pickle otherwise
        return _importlib.import_module, (self.__name__,)


_sys.modules[__name__].__class__ = _Package

__all__ = ["__version__", "errors", "file", "dataset", "write_dataset", "LanceDataset",
           "batch_udf", "BatchUDF", "fragment", "LanceOperation",
           "LanceFragment", "LanceScanner", "LanceError", "CorruptFileError",
           "NotSupportedError", "InvalidInputError", "CommitConflictError",
           "DatasetNotFoundError", "DatasetExistsError", "LanceFileReader", "LanceFileWriter",
           "inspect", "explain", "validate", "warmup"]
