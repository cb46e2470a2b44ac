"""FSST string compression: the codec (``fsst.py``) and symbol-table training
(``fsst_build.py``)."""
