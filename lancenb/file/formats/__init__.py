"""One backend per file-format family, behind :mod:`lancenb.file.backend`'s contract:
0.1 (``v0_1.py`` reads, ``v0_1_write.py`` writes), 2.0 (``v2_0.py``), 2.1 and 2.2
(``v2_1.py`` reads, with ``v2_1_plain.py`` for many plain fixed-width columns;
``v2_1_write.py`` writes)."""
