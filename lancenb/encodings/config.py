"""Encoding configuration: defaults < writer options < ``lance-encoding:*`` field metadata.

The metadata keys are the reference's spellings. Values are validated when a writer
is created, and a bad one raises ``InvalidInputError`` naming the field and the key.
Keys this module does not know are left alone (they may belong to newer writers).

* ``compression``: ``none``, ``lz4``, ``zstd`` or ``fsst``: general compression of
  mini-block values (``none`` also turns off bitpacking and RLE);
* ``compression-level``: integer level for zstd;
* ``rle-threshold``: float in (0, 1]: RLE is tried when runs < threshold * values
  (and kept when smaller). Default 1.0: pylance 14 takes RLE whenever it is smaller
  (observed at 0.87 runs per value), not the reference snapshot's 0.5;
* ``bss``: ``off``, ``on`` or ``auto``: byte-stream-split of 32/64-bit values under
  lz4/zstd;
* ``dict-divisor``: integer >= 1: dictionary when cardinality < values / divisor;
* ``dict-size-ratio``: float in (0, 1]: dictionary when its estimated size is below
  ratio * the raw size;
* ``structural-encoding``: ``miniblock`` or ``fullzip``: force the page layout.

lancenb's own key ``lancenb:profile`` (``default`` or ``compact``; also the writer
option ``LanceFileWriter(..., compression="compact")``) selects the *compact* profile:
every candidate a 2.1/2.2 reader decodes is tried and the smallest kept (General zstd
on mini-block chunks, byte-stream-split, dictionaries for numbers and for
one-byte strings, zstd-wrapped dictionaries, larger zstd chunks). pylance reads these
files exactly; they are smaller and slower to write. An explicit
``lance-encoding:compression`` on a field still wins for that field.

Two keys change a field's structure rather than its compression (:func:`is_packed`,
:func:`is_blob`): ``packed`` (``"true"``, any case; legacy spelling ``packed``) stores
a struct's fixed-width children row by row in one column, and ``blob`` (present)
stores a large_binary column's values out of line.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pyarrow as pa

from lancenb.errors import InvalidInputError

__all__ = ["EncodingConfig", "KEYS", "config_for_field", "is_packed", "is_blob", "PACKED",
           "BLOB", "PROFILE", "PROFILES", "writer_config"]

COMPRESSION = "lance-encoding:compression"
COMPRESSION_LEVEL = "lance-encoding:compression-level"
RLE_THRESHOLD = "lance-encoding:rle-threshold"
BSS = "lance-encoding:bss"
DICT_DIVISOR = "lance-encoding:dict-divisor"
DICT_SIZE_RATIO = "lance-encoding:dict-size-ratio"
STRUCTURAL_ENCODING = "lance-encoding:structural-encoding"
PACKED = "lance-encoding:packed"
PACKED_LEGACY = "packed"
BLOB = "lance-encoding:blob"
PROFILE = "lancenb:profile"
PROFILES = ("default", "compact")


def _metadata(field: pa.Field) -> dict[str, str]:
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode("utf-8", "replace")
                                                          if isinstance(v, bytes) else str(v))
            for k, v in (field.metadata or {}).items()}


def is_packed(field: pa.Field) -> bool:
    """A struct whose children are stored packed, row by row, in one column."""
    md = _metadata(field)
    return pa.types.is_struct(field.type) and any(
        md.get(k, "").strip().lower() == "true" for k in (PACKED, PACKED_LEGACY))


def is_blob(field: pa.Field) -> bool:
    """A binary column whose values are stored out of line (the blob layout)."""
    return BLOB in _metadata(field)

KEYS = (COMPRESSION, COMPRESSION_LEVEL, RLE_THRESHOLD, BSS, DICT_DIVISOR, DICT_SIZE_RATIO,
        STRUCTURAL_ENCODING)


@dataclass(frozen=True)
class EncodingConfig:
    """How one column's pages are encoded (see the module docstring)."""

    compression: str | None = None
    compression_level: int | None = None
    rle_threshold: float = 1.0
    bss: str = "auto"
    dict_divisor: int = 2
    dict_size_ratio: float = 0.8
    structural_encoding: str | None = None
    profile: str = "default"

    @property
    def compact(self) -> bool:
        """Whether the compact profile (smallest encoding, slower writes) is in force."""
        return self.profile == "compact"

    def merged(self, **overrides) -> "EncodingConfig":
        """A copy with the given fields replaced (None values leave a field as it is)."""
        return dataclasses.replace(self, **{k: v for k, v in overrides.items() if v is not None})


def _choice(value: str, allowed: tuple[str, ...], where: str) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise InvalidInputError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return v


def _number(value: str, kind, lo, hi, where: str):
    try:
        v = kind(value.strip())
    except ValueError:
        raise InvalidInputError(f"{where}: {value!r} is not a {kind.__name__}") from None
    if not (lo <= v <= hi) or v != v:
        raise InvalidInputError(f"{where}: {value!r} is outside [{lo}, {hi}]")
    return v


def config_for_field(field: pa.Field, base: EncodingConfig | None = None) -> EncodingConfig:
    """The configuration of ``field``: ``base`` (defaults and writer options) overridden
    by the field's ``lance-encoding:*`` metadata."""
    base = base or EncodingConfig()
    # metadata is bytes: keys and values that are not UTF-8 cannot be ours (and must not
    # stop a write of a field that carries them); a damaged lance-encoding value then
    # fails the usual validation below
    md = {(k.decode(errors="replace") if isinstance(k, bytes) else k):
          (v.decode(errors="replace") if isinstance(v, bytes) else str(v))
          for k, v in (field.metadata or {}).items()}
    out = {}
    if PROFILE in md:
        out["profile"] = _choice(md[PROFILE], PROFILES, f"field {field.name!r}, metadata "
                                                        f"{PROFILE}")
    for key, value in md.items():
        if not key.startswith("lance-encoding:"):
            continue
        where = f"field {field.name!r}, metadata {key}"
        if key == COMPRESSION:
            v = _choice(value, ("none", "lz4", "zstd", "fsst"), where)
            out["compression"] = v
        elif key == COMPRESSION_LEVEL:
            out["compression_level"] = _number(value, int, -131072, 22, where)
        elif key == RLE_THRESHOLD:
            out["rle_threshold"] = _number(value, float, 1e-9, 1.0, where)
        elif key == BSS:
            out["bss"] = _choice(value, ("off", "on", "auto"), where)
        elif key == DICT_DIVISOR:
            out["dict_divisor"] = _number(value, int, 1, 2**31, where)
        elif key == DICT_SIZE_RATIO:
            out["dict_size_ratio"] = _number(value, float, 1e-9, 1.0, where)
        elif key == STRUCTURAL_ENCODING:
            out["structural_encoding"] = _choice(value, ("miniblock", "fullzip"), where)
        # other keys (packed, blob, blob-version, and keys newer writers may add) are
        # structural options handled elsewhere, or not ours to judge: left alone
    return dataclasses.replace(base, **out)


def writer_config(compression: str | None) -> EncodingConfig:
    """The base configuration for a writer's ``compression`` option: ``None``/
    ``"default"`` (pylance's choices), ``"compact"`` (the compact profile), or a
    ``lance-encoding:compression`` value applied to every field without its own."""
    if compression is None or compression == "default":
        return EncodingConfig()
    where = "LanceFileWriter(compression=...)"
    v = _choice(str(compression), ("compact", "none", "lz4", "zstd", "fsst"), where)
    if v == "compact":
        return EncodingConfig(profile="compact")
    return EncodingConfig(compression=v)
