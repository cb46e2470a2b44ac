"""Secondary indices of a dataset: vector indices (``vector/``) and scalar and
full-text indices (``scalar/``), in pylance's on-disk format.

This layer sits below ``lancenb.dataset`` and above ``file``/``table``/``expr``: index
code works on a dataset object handed to it, through that object's public API.
"""
