"""Compressive encodings (one module each): bytes of values <-> compressed buffers."""
