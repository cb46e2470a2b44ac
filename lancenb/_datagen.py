"""pylance's ``lance._datagen``: random Arrow data for tests and benchmarks, which
pylance builds only with its Rust ``datagen`` feature (off in its released wheels).

lancenb has no such generator: :func:`is_datagen_supported` is False and
:func:`rand_batches` raises NotImplementedError, as released pylance does.

Examples
--------
>>> is_datagen_supported()
False
"""

from __future__ import annotations

__all__ = ["is_datagen_supported", "rand_batches"]


def is_datagen_supported() -> bool:
    """Whether :func:`rand_batches` works (never in lancenb)."""
    return False


def rand_batches(schema, *, num_batches: int | None = None,
                 batch_size_bytes: int | None = None, rows_per_batch: int | None = None):
    """Random batches of ``schema`` in pylance builds with the datagen feature; here
    NotImplementedError."""
    raise NotImplementedError("lancenb was not built with the datagen feature (it has no "
                              "random data generator)")
