"""FSST string compression: the codec (``fsst.py``), symbol-table training
(``fsst_build.py``) and decoding straight from mini-block chunks (``fsst_chunks.py``)."""
