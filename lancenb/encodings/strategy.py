"""Choosing how a page is encoded: a short chain of small decisions over the page's
statistics, each overridable through ``lance-encoding:*`` field metadata
(:mod:`lancenb.encodings.config`).

Order, as in the reference (2.1):

1. every value null → an all-null (2.1) / constant (2.2) page;
2. ``structural-encoding`` metadata, else values of ``FULL_ZIP_MIN_BYTES`` or more →
   full-zip, else mini-block; in mini-block pages, values of low cardinality
   (HyperLogLog estimate, ``dict-divisor``, ``dict-size-ratio``) → a dictionary, the
   chunks then holding u32 indices: strings, fixed-size binary and decimals; in 2.2
   also 64-bit numbers (see ``_dictionary_kind``);
3. mini-block values: vectors (fixed-size lists) → FixedSizeList, never compressed;
   ``compression=none`` → Flat/Variable; strings of at least 32 KiB
   whose longest value has 5+ bytes → FSST when it is smaller; 32/64-bit values under
   ``compression=lz4|zstd`` → ByteStreamSplit per ``bss`` (auto: byte-position entropy
   of the first 64 values below 4 bits); else 8/16/32/64-bit numbers →
   the smallest of Flat, InlineBitpacking and (when runs < ``rle-threshold`` x values)
   RLE; then ``compression=lz4|zstd`` wraps
   the result in General (kept only where it pays); the compact profile instead
   encodes every candidate and keeps the smallest (:mod:`lancenb.encodings.compact`),
   and encodes a page that may take a dictionary both with and without one (unless
   the dictionary page is ``COMPACT_DICT_KEEP_SHRINK`` times smaller than the values);
4. rep/def levels: bitpacked, or in 2.2 RLE where pylance 14 picks it
   (:mod:`lancenb.encodings.physical.levels`).

Tracing (for ``lancenb.explain`` and ``lancenb inspect``): pass a :class:`Trace` as
``encode_page(..., trace=t)`` and it receives the page's statistics, the thresholds in
force, the ``lance-encoding:*`` keys that changed the defaults and every step's verdict
(the same messages as ``why``). Without a trace the only cost is one ``is None`` test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from lancenb.encodings import blocks, compact
from lancenb.encodings import config as config_keys
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.physical import (
    bitpacking,
    bss,
    flat,
    fsl,
    fsst,
    general,
    packed_struct,
    rle,
    variable,
)
from lancenb.encodings.physical import dictionary as dictionary_enc
from lancenb.encodings.structural import allnull, fullzip, miniblock, repdef
from lancenb.kernels import stats as kstats
from lancenb.kernels.fsst import fsst as kfsst

__all__ = ["encode_page", "FULL_ZIP_MIN_BYTES", "choose_codec", "Trace"]

# Values this large or larger go to full-zip pages (the reference's cut-off).
FULL_ZIP_MIN_BYTES = 256
# Full-zip pages whose longest value exceeds this compress each value on its own
# (General zstd), provided the page holds at least PER_VALUE_MIN_PAGE_BYTES.
PER_VALUE_GENERAL_MIN_BYTES = 32 * 1024
PER_VALUE_MIN_PAGE_BYTES = 32 * 1024
# The compact profile tries a dictionary up to this estimated size ratio (it then
# encodes the page with and without one and keeps the smaller).
COMPACT_DICT_SIZE_RATIO = 1.5
# ... unless the dictionary page is this many times smaller than the raw values
COMPACT_DICT_KEEP_SHRINK = 8
# Strings with too many distinct values for a dictionary are told apart on a prefix:
# the sketch is fed this many values at a time ...
DISTINCT_CHECK_STEP = 16 * 1024
# ... and given up on (the full trial decides) once its estimate is below the values
# fed over this (values that repeat this much are likely to take a dictionary)
DISTINCT_CHECK_GIVE_UP = 4


def _max_value_bytes(block) -> int:
    if isinstance(block, blocks.Variable):
        return int(np.diff(block.offsets).max(initial=0))
    if isinstance(block, blocks.FixedSizeList):
        return block.value_bytes  # (boolean vectors: 0, always mini-block, as pylance)
    return block.bits // 8


def _bitpackable(dtype: pa.DataType, block) -> bool:
    return (isinstance(block, blocks.FixedWidth) and block.bits in (8, 16, 32, 64)
            and not pa.types.is_fixed_size_binary(dtype) and not pa.types.is_boolean(dtype))


def _fixed_default(dtype, block, cfg: EncodingConfig, why: list[str]):
    """The default fixed-width chain without the General wrapper: BSS (under lz4/zstd,
    per ``bss``), else the smallest of Flat, InlineBitpacking and RLE."""
    if (cfg.compression in ("lz4", "zstd") and isinstance(block, blocks.FixedWidth)
            and not pa.types.is_boolean(dtype) and bss.wanted(block, cfg.bss)):
        why.append(f"try_bss ({cfg.bss}): byte-stream-split")
        return bss.BssCodec(block)
    if cfg.compression in ("lz4", "zstd") and block.bits in (32, 64):
        why.append(f"try_bss ({cfg.bss}): no")
    base = flat.FLAT
    if _bitpackable(dtype, block) and block.num_values:
        raw = block.num_values * block.bits // 8
        best = raw
        inline = bitpacking.InlineCodec(block)  # (its chunk sizes are counted once)
        packed = inline.nbytes
        if packed < raw:
            why.append(f"try_bitpacking: {packed} B packed < {raw} B flat")
            base, best = inline, packed
        else:
            why.append(f"try_bitpacking: {packed} B packed >= {raw} B flat, kept flat")
        runs = int(kstats.run_count(block.data[:raw], block.bits // 8))
        # every run takes at least one value and one u8 length (chunk cuts and runs past
        # 255 only add entries), so RLE cannot win below this floor: skip planning it
        floor = runs * (block.bits // 8 + 1)
        if runs < cfg.rle_threshold * block.num_values and floor >= best:
            why.append(f"try_rle: {runs} runs, >= {floor} B >= {best} B")
        elif runs < cfg.rle_threshold * block.num_values:
            codec = rle.RleCodec(block)
            if codec.nbytes < best:
                why.append(f"try_rle: {runs} runs, {codec.nbytes} B < {best} B")
                base = codec
            else:
                why.append(f"try_rle: {runs} runs, {codec.nbytes} B >= {best} B")
        else:
            why.append(f"try_rle: {runs} runs >= rle-threshold {cfg.rle_threshold} x values")
    return base


def choose_codec(dtype: pa.DataType, block, cfg: EncodingConfig, why: list[str], *,
                 chunk_limit: int | None = None, dictionary_items: int | None = None):
    """The mini-block value codec for ``block`` (a
    :class:`lancenb.encodings.codecs.ChunkCodec`).
    ``chunk_limit`` and ``dictionary_items`` inform the compact profile
    (:func:`lancenb.encodings.compact.choose`)."""
    if isinstance(block, blocks.FixedSizeList):
        why.append("vectors: fixed_size_list items stored flat")
        return fsl.FslCodec()
    if pa.types.is_struct(dtype):
        why.append("packed struct: rows stored flat")
        return packed_struct.PackedCodec(packed_struct.child_bits(dtype))
    base = variable.VARIABLE if isinstance(block, blocks.Variable) else flat.FLAT
    if cfg.compression == "none":
        why.append("compression=none: no bitpacking or general compression")
        return base
    if cfg.compact and cfg.compression is None:
        return compact.choose(dtype, block, cfg, why, _fixed_default, chunk_limit=chunk_limit,
                              dictionary_items=dictionary_items)
    # FSST is the default string compressor; asking for lz4/zstd replaces it (as in
    # the reference)
    if isinstance(block, blocks.Variable) and block.num_values and (
            cfg.compression == "fsst" or (cfg.compression is None
                                          and fsst.worth_trying(block))):
        codec = fsst.FsstCodec(block)
        if codec.saves_space(block) or cfg.compression == "fsst":
            why.append(f"try_fsst: {len(block.data)} B of strings -> {len(codec.codes.data)} B")
            base = codec
        else:
            why.append("try_fsst: no gain, kept variable")
    if isinstance(block, blocks.FixedWidth):
        base = _fixed_default(dtype, block, cfg, why)
    if cfg.compression in ("lz4", "zstd"):
        why.append(f"compression={cfg.compression}: general wrapper where it pays")
        scheme = general.LZ4 if cfg.compression == "lz4" else general.ZSTD
        return general.GeneralCodec(base, scheme, cfg.compression_level)
    return base


def per_value_codec(block, cfg: EncodingConfig, why: list[str]):
    """Full-zip variable-width values: ``(block to zip, its description or None)``."""
    if cfg.compression == "none" or not block.num_values:
        return block, None
    size = len(block.data)
    largest = _max_value_bytes(block)
    requested = cfg.compression not in (None, "fsst")
    if (largest > PER_VALUE_GENERAL_MIN_BYTES or requested) and size >= PER_VALUE_MIN_PAGE_BYTES:
        scheme = general.LZ4 if cfg.compression == "lz4" else general.ZSTD
        why.append(f"per-value general ({'lz4' if scheme == general.LZ4 else 'zstd'}): "
                   f"largest value {largest} B")
        return (general.compress_values(block, scheme, cfg.compression_level),
                general.per_value_description(scheme, block.offset_bits, cfg.compression_level))
    if cfg.compression == "fsst" or fsst.worth_trying(block):
        codec = fsst.FsstCodec(block)
        if codec.saves_space(block) or cfg.compression == "fsst":
            why.append(f"per-value fsst: {size} B -> {len(codec.codes.data)} B")
            return codec.codes, codec.description()
        why.append("per-value fsst: no gain, kept variable")
    return block, None


# EncodingConfig field -> the metadata key that sets it
_CONFIG_KEYS = {"compression": config_keys.COMPRESSION,
                "compression_level": config_keys.COMPRESSION_LEVEL,
                "rle_threshold": config_keys.RLE_THRESHOLD, "bss": config_keys.BSS,
                "dict_divisor": config_keys.DICT_DIVISOR,
                "dict_size_ratio": config_keys.DICT_SIZE_RATIO,
                "structural_encoding": config_keys.STRUCTURAL_ENCODING}


class Trace:
    """What the strategy saw and decided for one page (plain data, JSON-ready).

    ``stats``: values, nulls, value bytes, largest value, estimated cardinality, runs;
    ``thresholds``: the limits the steps compared against; ``overrides``: metadata
    keys whose values differ from the defaults; ``steps``: one message per decision,
    in order (``"try_dictionary: 3 distinct of 1000: yes"``).
    """

    def __init__(self):
        self.stats: dict = {}
        self.thresholds: dict = {}
        self.overrides: dict = {}
        self.steps: list[str] = []

    def record_input(self, arr: pa.Array, cfg: EncodingConfig, levels) -> None:
        """Record the page's statistics, the thresholds in force and the overridden keys."""
        d = dictionary_enc
        defaults = EncodingConfig()
        self.overrides = {key: getattr(cfg, name) for name, key in _CONFIG_KEYS.items()
                          if getattr(cfg, name) != getattr(defaults, name)}
        self.thresholds = {"full_zip_min_value_bytes": FULL_ZIP_MIN_BYTES,
                           "dictionary_min_values": d.MIN_VALUES,
                           "dictionary_max_items": d.MAX_ITEMS,
                           "dict_divisor": cfg.dict_divisor,
                           "dict_size_ratio": cfg.dict_size_ratio,
                           "rle_threshold": cfg.rle_threshold,
                           "fsst_min_input_bytes": int(kfsst.LEAST_INPUT_SIZE),
                           "fsst_min_max_length": int(kfsst.LEAST_INPUT_MAX_LENGTH),
                           "per_value_general_min_bytes": PER_VALUE_GENERAL_MIN_BYTES}
        st = {"type": str(arr.type), "slots": len(arr), "nulls": arr.null_count,
              "nested_levels": levels is not None}
        if len(arr) and arr.null_count < len(arr) and not pa.types.is_struct(arr.type):
            block, _ = blocks.from_arrow(arr)
            st["value_bytes"] = (len(block.data) if isinstance(block, blocks.Variable)
                                 else block.num_values * block.bits // 8)
            st["largest_value_bytes"] = _max_value_bytes(block)
            if isinstance(block, (blocks.Variable, blocks.FixedWidth)) and block.num_values:
                st["cardinality_estimate"] = round(d.estimate_cardinality(block))
            if _bitpackable(arr.type, block) and block.num_values:
                raw = block.num_values * block.bits // 8
                st["runs"] = int(kstats.run_count(block.data[:raw], block.bits // 8))
                st["bitpacked_bytes"] = int(bitpacking.packed_bytes(
                    bitpacking.as_unsigned(block)))
        self.stats = st

    def to_dict(self) -> dict:
        """The trace as plain data (JSON-ready)."""
        return {"stats": self.stats, "thresholds": self.thresholds,
                "overrides": self.overrides, "steps": list(self.steps)}


def _too_many_distinct(block, cfg: EncodingConfig, why: list[str]) -> bool:
    """Whether the values of a variable-width ``block`` surely have too many distinct
    values for a dictionary (``dictionary.try_dictionary``'s first test), found
    without sketching them all: HyperLogLog registers only rise as values are added,
    and the estimate with them, so once the estimate over the first values reaches
    ``values / dict-divisor`` or passes ``MAX_ITEMS``, the whole page's does too and the
    trial would say no. (Unique strings: about the first 100 Ki values are hashed
    instead of every value twice.)"""
    n = block.num_values
    if n < dictionary_enc.MIN_VALUES:
        return False
    registers = np.zeros(1 << dictionary_enc.HLL_PRECISION, np.uint8)
    for start in range(0, n, DISTINCT_CHECK_STEP):
        end = min(n, start + DISTINCT_CHECK_STEP)
        kstats.hll_variable(block.offsets[start:end + 1], block.data,
                            dictionary_enc.HLL_SEED, registers)
        card = float(kstats.hll_estimate(registers))
        if card >= n / cfg.dict_divisor or card > dictionary_enc.MAX_ITEMS:
            why.append(f"try_dictionary: ~{card:.0f} distinct in the first {end} of {n} "
                       f"values (divisor {cfg.dict_divisor}): no")
            return True
        if card * DISTINCT_CHECK_GIVE_UP < end:
            return False
    return False


def _dictionary_kind(dtype: pa.DataType, block, cfg: EncodingConfig,
                     version_minor: int) -> bool | None:
    """Whether a dictionary is tried: None (no), False (strings, binary, fixed-size
    binary, decimals), True (numbers: compared with their bitpacked size).

    As pylance 14: strings and binary; fixed-size binary of 8+ bytes and decimals; in
    2.2 also 64-bit numbers (ints, floats, timestamps). The compact profile also tries
    numbers of 16+ bits in 2.1 (pylance reads those dictionaries). An explicit
    ``compression`` turns dictionaries off in 2.1 (not in 2.2, as pylance).
    """
    if cfg.compression is not None and version_minor < 2:
        return None
    if isinstance(block, blocks.Variable):
        return False
    if not isinstance(block, blocks.FixedWidth) or pa.types.is_boolean(dtype) \
            or pa.types.is_struct(dtype):
        return None
    if pa.types.is_fixed_size_binary(dtype):
        return False if block.bits >= 64 else None
    if pa.types.is_decimal(dtype):
        return False
    if block.bits >= 64 and version_minor >= 2:
        return True
    if cfg.compact and block.bits >= 16:
        return True
    return None


def encode_page(arr: pa.Array, cfg: EncodingConfig, *, version_minor: int,
                why: list[str] | None = None, levels=None, trace: Trace | None = None):
    """Encode a flat Arrow array as one page: ``(buffers, PageLayout)``.

    ``levels`` (rep/def levels of a nested column) makes ``arr`` the leaf's value
    slots, one per visible level; the levels then carry the nulls. ``trace``
    receives the statistics and decisions (see :class:`Trace`).
    """
    if trace is not None:
        trace.record_input(arr, cfg, levels)
        why = trace.steps
    why = [] if why is None else why
    if levels is not None:
        validity = repdef.leaf_validity(levels)
        if len(arr) == 0 or (validity is not None and not validity.any()):
            why.append("no valid values: all-null page with rep/def levels")
            return allnull.encode_levels(levels, version_minor=version_minor)
    elif len(arr) and arr.null_count == len(arr):
        why.append("all values null: all-null page")
        return allnull.encode()
    block, validity0 = blocks.from_arrow(arr)
    validity = validity0 if levels is None else validity
    largest = _max_value_bytes(block)
    layout = cfg.structural_encoding or ("fullzip" if largest >= FULL_ZIP_MIN_BYTES
                                         else "miniblock")
    if pa.types.is_struct(arr.type):
        # pylance 14 refuses to zip fixed-width packed structs: always chunk them
        layout = "miniblock"
    why.append(f"structural: {layout} (largest value {largest} B"
               f"{', forced by metadata' if cfg.structural_encoding else ''})")
    if layout == "fullzip":
        value_compression = None
        if isinstance(block, blocks.Variable):
            block, value_compression = per_value_codec(block, cfg, why)
        return fullzip.encode(block, validity, levels=levels,
                              value_compression=value_compression)
    chunk_limit = miniblock.MAX_CHUNK_BYTES if validity is None and levels is None else None
    numeric = _dictionary_kind(arr.type, block, cfg, version_minor)
    found = None
    if numeric is False and isinstance(block, blocks.Variable) and _too_many_distinct(
            block, cfg, why):
        pass  # (the trial would say no: the message is in why)
    elif numeric is not None:
        baseline = None
        if numeric and _bitpackable(arr.type, block) and block.num_values:
            baseline = bitpacking.packed_bytes(bitpacking.as_unsigned(block))
        dcfg = cfg
        if cfg.compact:  # both pages are encoded below and the smaller kept
            dcfg = dataclasses.replace(cfg, dict_size_ratio=max(cfg.dict_size_ratio,
                                                                COMPACT_DICT_SIZE_RATIO))
        found = dictionary_enc.try_dictionary(
            block, dcfg, version_minor=version_minor, why=why, baseline=baseline,
            items_scheme=general.ZSTD if cfg.compact else None)
    elif isinstance(block, blocks.Variable):
        why.append(f"try_dictionary: skipped (compression={cfg.compression})")

    def encode(dictionary):
        if dictionary is None:
            vblock, dtype, dinfo, items = block, arr.type, None, None
        else:
            vblock, items, desc, count = dictionary
            dtype, dinfo = pa.uint32(), (items, desc, count)
        codec = choose_codec(dtype, vblock, cfg, why, chunk_limit=chunk_limit,
                             dictionary_items=None if dinfo is None else dinfo[2])
        return miniblock.encode(vblock, validity, codec=codec, pack_levels=True,
                                large_chunks=version_minor >= 2, dictionary=dinfo,
                                levels=levels, version_minor=version_minor)

    if found is None:
        return encode(None)
    with_dict = encode(found)
    raw = (len(block.data) + block.offset_bits // 8 * block.num_values
           if isinstance(block, blocks.Variable) else block.num_values * block.bits // 8)
    dict_bytes = sum(len(b) for b in with_dict[0])
    if not cfg.compact or dict_bytes * COMPACT_DICT_KEEP_SHRINK <= raw:
        return with_dict
    without = encode(None)
    size = sum(len(b) for b in without[0])
    why.append(f"compact: dictionary page {dict_bytes} B, without {size} B")
    return with_dict if dict_bytes <= size else without
