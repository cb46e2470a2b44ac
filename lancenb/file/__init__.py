"""Lance files: ``LanceFileWriter`` and ``LanceFileReader`` (pylance's ``lance.file``).

``LanceFileReader`` opens files of every version (0.1 files come back as a
:class:`LegacyFileReader`, which has the same read surface); ``LanceFileWriter``
writes 2.0, 2.1 and 2.2.
"""

from lancenb.file.legacy import LegacyFileReader
from lancenb.file.reader import LanceFileMetadata, LanceFileReader, ReaderResults
from lancenb.file.version import FileVersion
from lancenb.file.writer import LanceFileWriter

__all__ = ["LanceFileReader", "LanceFileWriter", "ReaderResults", "LanceFileMetadata",
           "FileVersion", "LegacyFileReader"]
