"""Lance file format 2.0: the ``lance.encodings.ArrayEncoding`` page trees.

``decode`` (one page's tree → Arrow), ``ranges`` (random access into a page),
``columns`` (fields ↔ columns, reading a field's rows), ``encode`` (Arrow → one
page's buffers and tree) and ``writing`` (a file's column writers).
"""

from lancenb.encodings.v2_0.columns import FileColumns

__all__ = ["FileColumns"]
