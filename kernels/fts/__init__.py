"""Full-text search kernels: top-k BM25 with MaxScore and per-block bounds (``topk.py``)."""
