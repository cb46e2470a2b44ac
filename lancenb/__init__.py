"""lancenb: the Lance columnar file and table format in Python, with Numba kernels.

``import lancenb as lance`` gives a pylance-compatible subset; today that is the file
API in :mod:`lancenb.file`.
"""

from lancenb import errors, file
from lancenb.errors import (
    CorruptFileError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
)
from lancenb.file import LanceFileReader, LanceFileWriter

__version__ = "0.1.0"

__all__ = ["__version__", "errors", "file", "LanceError", "CorruptFileError",
           "NotSupportedError", "InvalidInputError", "LanceFileReader", "LanceFileWriter"]
