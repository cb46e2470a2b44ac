"""Vector search: flat (exact) search and IVF/PQ/SQ/HNSW indices."""
