"""Arrow arrays <-> Lance pages: data blocks, compressive encodings and layouts."""
