"""Lance files: ``LanceFileWriter`` and ``LanceFileReader`` (pylance's ``lance.file``)."""

from lancenb.file.reader import LanceFileMetadata, LanceFileReader, ReaderResults
from lancenb.file.version import FileVersion
from lancenb.file.writer import LanceFileWriter

__all__ = ["LanceFileReader", "LanceFileWriter", "ReaderResults", "LanceFileMetadata",
           "FileVersion"]
