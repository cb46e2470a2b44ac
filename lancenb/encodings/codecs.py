"""The interfaces of the compressive encodings (:mod:`lancenb.encodings.physical`).

An encoding is a strategy object, never a module: the strategy
(:mod:`lancenb.encodings.strategy`) picks a :class:`ChunkCodec` for a mini-block
page's values, and :func:`lancenb.encodings.physical.value_decoder` builds a
:class:`ChunkDecoder` from a page's ``CompressiveEncoding`` description alone.

Chunk buffers are described by ``(src, starts, sizes)``: ``src`` a uint8 array,
``starts``/``sizes`` int64 arrays of shape ``(chunks, buffers per chunk)`` giving each
chunk buffer as ``src[start:start + size]``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["ChunkCodec", "ChunkDecoder"]


class ChunkCodec(Protocol):
    """Encodes a block's values as mini-block chunk buffers.

    Examples
    --------
    >>> import numpy as np
    >>> from lancenb.encodings.blocks import FixedWidth
    >>> from lancenb.encodings.physical.flat import FLAT
    >>> block = FixedWidth(16, np.array([1, 0, 2, 0], np.uint8), 2)
    >>> bounds = FLAT.plan(block)
    >>> bounds.tolist()
    [0, 2]
    >>> src, starts, sizes, desc = FLAT.encode_chunks(block, bounds)
    >>> sizes.tolist(), desc.WhichOneof("compression")
    ([[4]], 'flat')
    """

    def plan(self, block) -> np.ndarray:
        """Chunk boundaries: the first value of each chunk, then the value count."""

    def encode_chunks(self, block, bounds: np.ndarray):
        """``(src, starts, sizes, description)`` of the chunks cut at ``bounds``."""


class ChunkDecoder(Protocol):
    """Decodes the values (or levels) of mini-block chunks.

    ``data`` holds the chunks' bytes; ``starts``/``sizes`` locate each chunk's
    buffers in it; ``counts`` is the number of values in each chunk; ``where`` names
    the page in error messages.
    """

    can_gather: bool  # whether :meth:`gather` is offered (else only whole chunks decode)
    #: decoders with equal keys decode the chunks of many pages in one call (their
    #: values depend on nothing but the chunks' bytes); None: one page at a time
    batch_key = None

    def decode(self, data, starts, sizes, counts, where):
        """Every value of the chunks, as one block."""

    def gather(self, data, starts, sizes, counts, slot, local, where):
        """Only the values at positions ``local`` of chunk ``slot`` (when
        ``can_gather``)."""
