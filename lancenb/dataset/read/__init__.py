"""Reading a dataset: the scanner (``scanner.py``, its plan in ``scanplan.py``, filters
applied per fragment in ``scanfilter.py``), takes by row (``take.py``), columns matched
by field id (``field_ids.py``), nested projections (``nested.py``), read-ahead, blobs
(``blob.py``) and read-ahead of batches and small files (``readahead.py``)."""
