"""Lance file format 2.0: the ``lance.encodings.ArrayEncoding`` page trees.

``decode`` (one page's tree → Arrow), ``ranges`` (random access into a page),
``columns`` (which fields are packed structs and blobs), ``encode`` (Arrow → one
page's buffers and tree) and ``writing`` (a file's column writers). Reading a whole
2.0 file (fields → columns) is :mod:`lancenb.file.formats.v2_0`.
"""
