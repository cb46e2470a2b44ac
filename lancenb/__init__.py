"""lancenb: the Lance columnar file and table format in Python, with Numba kernels.

``import lancenb as lance`` gives a pylance-compatible subset: datasets
(:func:`write_dataset`, :func:`dataset`, :class:`LanceDataset`) and the file API in
:mod:`lancenb.file`.
"""

__version__ = "0.1.0"

from lancenb import errors, file, fragment  # noqa: E402
from lancenb.dataset import (  # noqa: E402
    LanceDataset,
    LanceFragment,
    LanceScanner,
    write_dataset,
)
from lancenb.dataset import dataset as _dataset_fn  # noqa: E402
from lancenb.dataset.evolution import BatchUDF, batch_udf  # noqa: E402
from lancenb.dataset.operations import LanceOperation  # noqa: E402
from lancenb.errors import (  # noqa: E402
    CommitConflictError,
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
)
from lancenb.file import LanceFileReader, LanceFileWriter  # noqa: E402
from lancenb.inspect import explain, validate  # noqa: E402
from lancenb.inspect import inspect as _inspect_fn  # noqa: E402

# like pylance, the name ``dataset`` is the open function (the subpackage stays
# importable as ``lancenb.dataset.<module>``)
dataset = _dataset_fn
# likewise ``inspect`` is the function (``from lancenb.inspect import ...`` still works)
inspect = _inspect_fn

__all__ = ["__version__", "errors", "file", "dataset", "write_dataset", "LanceDataset",
           "batch_udf", "BatchUDF", "fragment", "LanceOperation",
           "LanceFragment", "LanceScanner", "LanceError", "CorruptFileError",
           "NotSupportedError", "InvalidInputError", "CommitConflictError",
           "DatasetNotFoundError", "DatasetExistsError", "LanceFileReader", "LanceFileWriter",
           "inspect", "explain", "validate"]
