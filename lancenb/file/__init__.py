"""Lance files: ``LanceFileWriter`` and ``LanceFileReader`` (pylance's ``lance.file``).

``LanceFileReader`` opens files of every version (0.1, 2.0, 2.1, 2.2) through one
backend per version family (:mod:`lancenb.file.backend`); :class:`LegacyFileReader`
is the same reader, refusing anything but 0.1. ``LanceFileWriter`` writes 2.0, 2.1
and 2.2. :class:`LanceFileSession` opens files relative to one base path;
:func:`stable_version` names the version written by default.
"""

from lancenb.file.reader import (
    LanceFileMetadata,
    LanceFileReader,
    LegacyFileReader,
    ReaderResults,
)
from lancenb.file.session import LanceFileSession, ListResult
from lancenb.file.version import FileVersion
from lancenb.file.writer import LanceFileWriter

__all__ = ["LanceFileReader", "LanceFileWriter", "ReaderResults", "LanceFileMetadata",
           "FileVersion", "LegacyFileReader", "LanceFileSession", "ListResult",
           "stable_version"]


def stable_version() -> str:
    """The file format version written when none is asked for (pylance's "stable").

    Examples
    --------
    >>> stable_version()
    '2.2'
    """
    return FileVersion.resolve("stable").label
