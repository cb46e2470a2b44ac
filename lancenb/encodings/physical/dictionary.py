"""Dictionary: each distinct value stored once, chunks holding indices into it.

In a mini-block page the chunk values are 0-based u32 indices (compressed like any
32-bit values, normally InlineBitpacking) and page buffer 2 holds the items, block
compressed: the Variable block form for strings (``u32 32 | u32 start | offsets |
bytes``, see ``variable.encode_block``), raw Flat values for fixed-width items, and in
2.2 either of those wrapped in General LZ4. Nulls stay in the definition levels.
Example: ``["b", "a", "b", "b"]`` → items ``["b", "a"]``, indices ``0 1 0 0``.

Chosen when a page has at least 100 values, its estimated cardinality (HyperLogLog)
is below ``values / dict-divisor`` and 100,000, and the estimated encoded size
(bitpacked indices plus items) is below ``dict-size-ratio`` times the size without a
dictionary (``baseline``: raw, or bitpacked for numbers). Which types are tried is the
strategy's call (as pylance 14: strings, fixed-size binary and decimals in 2.1, also
64-bit numbers in 2.2; the compact profile also numbers of 16+ bits in 2.1, whose
dictionaries pylance reads).

``items_scheme`` overrides how the items are block-compressed: ``None`` as the
version does it (2.1 plain, 2.2 LZ4), or ``general.ZSTD`` (compact profile; kept
only when smaller).
"""

from __future__ import annotations

import math

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth, Variable
from lancenb.encodings.physical import general, variable
from lancenb.kernels import dictionary as kd
from lancenb.kernels import slices
from lancenb.kernels import stats as kstats
from lancenb.kernels import stats_rows as kstats_rows

__all__ = ["try_dictionary", "MIN_VALUES", "MAX_ITEMS"]

MIN_VALUES = 100
MAX_ITEMS = 100_000
HLL_PRECISION = 12
HLL_SEED = 0


def estimate_cardinality(block) -> float:
    """The HyperLogLog estimate of the number of distinct values in ``block``."""
    return _sketch(block)[0]


def _sketch(block, keep_hashes: bool = False):
    """``(estimate, hashes)``: the HyperLogLog estimate and, for variable-width values
    when ``keep_hashes``, each value's hash (for the dictionary build; else None)."""
    registers = np.zeros(1 << HLL_PRECISION, np.uint8)
    hashes = None
    if isinstance(block, Variable) and keep_hashes:
        hashes = np.empty(block.num_values, np.uint64)
        kstats.hll_variable_hashes(block.offsets, block.data, HLL_SEED, registers, hashes)
    elif isinstance(block, Variable):
        kstats.hll_variable(block.offsets, block.data, HLL_SEED, registers)
    else:
        _add_fixed(block, 0, block.num_values, registers)
    return float(kstats.hll_estimate(registers)), hashes


# fixed-width values are sketched this many at a time, the estimate looked at between
# steps (a look costs about what hashing 1,000 values does) ...
SKETCH_STEP = 16 * 1024
# ... until it is below 1 / SKETCH_GIVE_UP of the values fed (few distinct values: the
# rest go in at once, no more looks)
SKETCH_GIVE_UP = 4


def _add_fixed(block, start: int, end: int, registers: np.ndarray) -> None:
    """Add fixed-width values ``start:end`` of ``block`` to the sketch."""
    w = block.bits // 8
    if block.bits in (128, 192):  # (decimals, uuids: hashed a word at a time)
        k = w // 8
        words = block.data[:block.num_values * w].view(np.uint64).reshape(-1, k)
        kstats_rows.hll_words(words[start:end], HLL_SEED, registers)
    else:
        kstats.hll_fixed(block.data[start * w:end * w], w, HLL_SEED, registers)


def _sketch_fixed(block, no_at: float) -> tuple[float, int]:
    """``(estimate, values sketched)`` of a fixed-width block, stopping as soon as the
    estimate reaches ``no_at`` or passes ``MAX_ITEMS``: registers only rise as values
    are added, and the estimate with them, so the whole block's estimate would too
    and the trial's answer is already no (unique 64-bit values: about the first
    100 Ki are hashed, not all). Otherwise the estimate of every value, as
    :func:`estimate_cardinality` gives it."""
    registers = np.zeros(1 << HLL_PRECISION, np.uint8)
    n = block.num_values
    start, card, looking = 0, 0.0, True
    while start < n:
        end = min(n, start + SKETCH_STEP) if looking else n
        _add_fixed(block, start, end, registers)
        card = float(kstats.hll_estimate(registers))
        if card >= no_at or card > MAX_ITEMS:
            return card, end
        looking = card * SKETCH_GIVE_UP >= end
        start = end
    return card, n


def try_dictionary(block, cfg, *, version_minor: int, why: list[str],
                   baseline: float | None = None, items_scheme: int | None = None):
    """``(indices block, dictionary bytes, dictionary description, item count)`` or
    None when a dictionary does not pay."""
    n = block.num_values
    if n < MIN_VALUES:
        return None
    if isinstance(block, Variable):
        (card, hashes), seen = _sketch(block, keep_hashes=True), n
    else:
        (card, seen), hashes = _sketch_fixed(block, n / cfg.dict_divisor), None
    if card >= n / cfg.dict_divisor or card > MAX_ITEMS:
        part = f"in the first {seen} " if seen < n else ""
        why.append(f"try_dictionary: ~{card:.0f} distinct {part}of {n} (divisor "
                   f"{cfg.dict_divisor}): no")
        return None
    index_bytes = n * max(1, math.ceil(math.log2(card + 1))) / 8
    if isinstance(block, Variable):
        raw = len(block.data) + 4 * n
        est = index_bytes + card * (len(block.data) / n + 4)
    else:
        raw = n * block.bits / 8
        est = index_bytes + card * block.bits / 8
    if baseline is not None:
        raw = min(raw, baseline)
    if est >= cfg.dict_size_ratio * raw:
        why.append(f"try_dictionary: estimated {est:.0f} B >= {cfg.dict_size_ratio} x "
                   f"{raw:.0f} B: no")
        return None
    limit = min(MAX_ITEMS, int(card * 1.5) + 64)
    table = np.zeros(kd.table_size(limit), np.uint64)
    indices = np.empty(n, np.uint32)
    first = np.empty(limit, np.int64)
    if isinstance(block, Variable):
        k = kd.build_variable_hashed(block.offsets, block.data, hashes, limit, table,
                                     indices, first)
    else:
        w = block.bits // 8
        k = kd.build_fixed(block.data[:n * w], w, limit, table, indices, first)
    if k < 0:
        why.append("try_dictionary: more distinct values than estimated: no")
        return None
    first = first[:k]
    if isinstance(block, Variable):
        starts = block.offsets[first]
        sizes = block.offsets[first + 1] - starts
        offsets = np.zeros(k + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        data = np.empty(int(offsets[-1]), np.uint8)
        slices.concat_slices(block.data, starts, sizes, data)
        items = variable.encode_block(Variable(offsets, data, k, block.offset_bits))
        desc = pb.variable(block.offset_bits)
    else:
        w = block.bits // 8
        items = block.data[:n * w].reshape(n, w)[first].reshape(-1)
        desc = pb.flat(block.bits)
    scheme = items_scheme or (general.LZ4 if version_minor >= 2 else None)
    if scheme is not None:  # 2.2 wraps the dictionary in LZ4
        packed = np.frombuffer(general.compress(items, scheme, cfg.compression_level),
                               np.uint8)
        if items_scheme is None or len(packed) < len(items):
            items = packed
            desc = pb.e21.CompressiveEncoding(general=pb.e21.General(
                compression=pb.e21.BufferCompression(scheme=scheme), values=desc))
    why.append(f"try_dictionary: {k} distinct of {n}: yes")
    return FixedWidth(32, indices.view(np.uint8), n), items, desc, k
