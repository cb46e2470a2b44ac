"""JSON kernels: pylance's JSONB layout read and written (``jsonb.py``,
``jsonb_encode.py``), JSON text tokenised (``jsontape.py``), numbers
(``jsonnum.py``), JSONPath lookups (``jsonpath.py``)."""
