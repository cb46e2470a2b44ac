"""Writing a dataset: ``write_dataset`` and fragment writes (``insert.py``), row changes
(``mutation.py``: delete, update, merge_insert), schema evolution (``evolution.py``,
``retype.py``, ``udf.py``), compaction and cleanup (``compaction.py``, ``cleanup.py``,
``optimize.py``), and the normalisation of every accepted input (``inputs.py``)."""
