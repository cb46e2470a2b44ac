"""Legacy (0.1) files: the names this module has always offered.

The 0.1 format is read by :mod:`lancenb.file.formats.v0_1` (its byte layout is that module's
docstring) behind :class:`~lancenb.file.LanceFileReader`;
:class:`~lancenb.file.reader.LegacyFileReader` is the reader that accepts only 0.1
files.
"""

from lancenb.file.formats.v0_1 import FOOTER_SIZE, PageStats, is_legacy_footer
from lancenb.file.reader import LegacyFileReader

__all__ = ["LegacyFileReader", "PageStats", "is_legacy_footer", "FOOTER_SIZE"]
