"""Manifest files: names, framing, feature flags, version listing.

A dataset version is one manifest file under ``_versions/``. Two naming schemes
exist and a dataset uses exactly one:

* V2 (default): ``{2**64 - 1 - version:020}.manifest``, so a plain lexicographic
  listing returns the newest version first; version 1 is
  ``18446744073709551614.manifest``.
* V1: ``{version}.manifest``.

A manifest file is a sequence of length-prefixed protobuf sections, then a footer::

    [u32 len][IndexSection]   optional; Manifest.index_section holds its offset
    [u32 len][Transaction]    the transaction that made this version
    [u32 len][Manifest]       <- manifest position
    i64 manifest position | u16 0 | u16 2 | b"LANC"

Feature flags (reader and writer sets): 1 deletion files, 2 stable row ids,
4 legacy "v2" marker, 8 table config (writer only), 16 base paths, 32 transaction
files disabled (writer only). A flag this library does not know means the
dataset needs a feature it lacks, so it refuses rather than misread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from lancenb._proto import table_pb2, transaction_pb2
from lancenb.encodings import pb
from lancenb.errors import CorruptFileError, InvalidInputError, LanceIOError, NotSupportedError
from lancenb.file.version import FileVersion

__all__ = ["VERSIONS_DIR", "manifest_name", "parse_manifest_name", "parse_manifest_names",
           "frame_manifest", "dictionary_prefix",
           "parse_manifest_file", "manifest_span", "parse_manifest_message", "message_records",
           "ManifestFile", "check_feature_flags", "FLAG_DELETION_FILES",
           "FLAG_STABLE_ROW_IDS", "FLAG_TABLE_CONFIG", "FLAG_BASE_PATHS",
           "FLAG_DISABLE_TRANSACTION_FILE", "HINT_FILE"]

VERSIONS_DIR = "_versions"
HINT_FILE = "_versions/latest_version_hint.json"
DATA_DIR = "data"  # data files, relative to the dataset root
MANIFEST_MAGIC = b"LANC"
MANIFEST_FOOTER = 16
_U64_MAX = 2**64 - 1
V2_NAME_DIGITS = 20

FLAG_DELETION_FILES = 1
FLAG_STABLE_ROW_IDS = 2
FLAG_USE_V2_FORMAT_DEPRECATED = 4
FLAG_TABLE_CONFIG = 8
FLAG_BASE_PATHS = 16
FLAG_DISABLE_TRANSACTION_FILE = 32
_KNOWN_READER_FLAGS = (FLAG_DELETION_FILES | FLAG_STABLE_ROW_IDS | FLAG_USE_V2_FORMAT_DEPRECATED
                       | FLAG_BASE_PATHS)
_KNOWN_WRITER_FLAGS = _KNOWN_READER_FLAGS | FLAG_TABLE_CONFIG | FLAG_DISABLE_TRANSACTION_FILE


def manifest_name(version: int, v2: bool) -> str:
    """The file name of ``version``'s manifest: ``{version}.manifest`` (V1) or the
    20-digit inverted form (V2, newest first in listings)."""
    if version < 1 or version > _U64_MAX - 1:
        # versions come from manifests: one past the last nameable is damage
        raise CorruptFileError(f"version {version} has no manifest name (versions are "
                               f"1..{_U64_MAX - 1})")
    if v2:
        return f"{_U64_MAX - version:0{V2_NAME_DIGITS}d}.manifest"
    return f"{version}.manifest"


def parse_manifest_name(name: str) -> tuple[int, bool] | None:
    """``(version, is_v2)`` of a manifest file name, or None for other names.

    Strict, and ignoring what is not a manifest name as the reference does: ASCII
    digits only (``².manifest`` is not version 2), and a version in ``1..2**64 - 2``
    (a 20-digit name above ``2**64 - 1`` or equal to it, or a V1 name of 0 or past
    ``u64``, names no version).
    """
    if not name.endswith(".manifest"):
        return None
    stem = name[: -len(".manifest")]
    if not (stem.isascii() and stem.isdigit()):
        return None
    n = int(stem)
    if len(stem) == V2_NAME_DIGITS:  # V2: the 21st character is the '.'
        version, v2 = _U64_MAX - n, True
    else:
        version, v2 = n, False
    if not 1 <= version <= _U64_MAX - 1:
        return None
    return version, v2


_V2_NAME_LEN = V2_NAME_DIGITS + len(".manifest")


def parse_manifest_names(names) -> tuple[list[int], list[int]]:
    """``(V1 versions, V2 versions)`` named in a listing of ``_versions/``, other names
    ignored: :func:`parse_manifest_name` over all of them, with the V2 names (all but a
    few, in a dataset of many versions) checked together: their stems joined and tested
    for ASCII digits in one call, then converted, instead of one call chain per name."""
    stems = [n[:V2_NAME_DIGITS] for n in names
             if len(n) == _V2_NAME_LEN and n.endswith(".manifest")]
    joined = "".join(stems)
    if not (joined.isascii() and joined.isdigit()):
        stems, rest = [], names  # some odd name among them: one at a time
    else:
        rest = [n for n in names if len(n) != _V2_NAME_LEN]
    v2 = [_U64_MAX - n for n in map(int, stems) if 0 < n < _U64_MAX]
    v1 = []
    for name in rest:
        parsed = parse_manifest_name(name)
        if parsed is not None:
            (v2 if parsed[1] else v1).append(parsed[0])
    return v1, v2


def frame_manifest(manifest, transaction=None, index_section: bytes | None = None, *,
                   base=None) -> bytes:
    """Serialise a manifest file (sets the section offsets on ``manifest``, and checks
    its storage version against its files: :func:`check_storage_version`). ``base``:
    the :class:`ManifestFile` it was built from, whose dictionary values it keeps
    (:func:`dictionary_prefix`)."""
    check_storage_version(manifest, f"version {manifest.version}")
    prefix = dictionary_prefix(base, manifest)
    parts = [prefix] if prefix else []
    pos = len(prefix)
    if index_section is not None:
        manifest.index_section = pos
        parts.append(struct.pack("<I", len(index_section)) + index_section)
        pos += 4 + len(index_section)
    else:
        manifest.ClearField("index_section")
    if transaction is not None:
        tb = transaction.SerializeToString()
        manifest.transaction_section = pos
        parts.append(struct.pack("<I", len(tb)) + tb)
        pos += 4 + len(tb)
    else:
        manifest.ClearField("transaction_section")
    manifest.ClearField("transaction_section_deprecated")
    mb = manifest.SerializeToString()
    parts.append(struct.pack("<I", len(mb)) + mb)
    parts.append(struct.pack("<qHH", pos, 0, 2) + MANIFEST_MAGIC)
    return b"".join(parts)


def dictionary_prefix(base, manifest) -> bytes:
    """The bytes before the first section of ``base`` (a :class:`ManifestFile`) when
    ``manifest`` has dictionary fields: a 0.1 dataset's dictionary values, which
    pylance writes there and its fields' ``dictionary.offset`` point at, copied so those
    offsets stay valid in the new file; else nothing."""
    if base is None or not any(f.HasField("dictionary") and f.dictionary.length
                               for f in manifest.fields):
        return b""
    m = base.manifest
    starts = [int(manifest_span(base.raw, base.name)[0]) - 4]  # (its length prefix)
    for name in ("index_section", "transaction_section"):
        if m.HasField(name):
            starts.append(int(getattr(m, name)))
    end = min(starts)
    if any(f.HasField("dictionary") and f.dictionary.length and f.dictionary.offset >= end
           for f in manifest.fields):
        raise NotSupportedError(f"manifest {base.name!r}: a dictionary's values are not "
                                f"before its sections; lancenb cannot carry them over")
    return bytes(base.raw[:end])


@dataclass
class ManifestFile:
    """A parsed manifest file."""

    manifest: object  # table_pb2.Manifest
    raw: bytes
    name: str
    size: int

    @property
    def version(self) -> int:
        """The manifest's version number."""
        return int(self.manifest.version)

    def _section(self, offset: int, what: str) -> bytes:
        if offset < 0 or offset + 4 > len(self.raw) - MANIFEST_FOOTER:
            raise CorruptFileError(f"manifest {self.name!r}: {what} offset {offset} is outside "
                                   f"the file ({len(self.raw)} bytes)")
        (n,) = struct.unpack_from("<I", self.raw, offset)
        if offset + 4 + n > len(self.raw) - MANIFEST_FOOTER:
            raise CorruptFileError(f"manifest {self.name!r}: {what} at {offset} claims {n} bytes, "
                                   f"past the end of the file")
        return self.raw[offset + 4: offset + 4 + n]

    def transaction(self):
        """The inline transaction (field 23, or 21 from older writers), or None."""
        m = self.manifest
        if m.HasField("transaction_section"):
            off = int(m.transaction_section)
        elif m.HasField("transaction_section_deprecated"):
            off = int(m.transaction_section_deprecated)
        else:
            return None
        return pb.parse(transaction_pb2.Transaction, self._section(off, "transaction"),
                        f"manifest {self.name!r}: inline transaction")

    def index_section_bytes(self) -> bytes | None:
        """The raw index section of the manifest file (kept by restore)."""
        if not self.manifest.HasField("index_section"):
            return None
        return self._section(int(self.manifest.index_section), "index section")


def manifest_span(raw: bytes, name: str) -> tuple[int, int]:
    """``(start, end)`` of the Manifest message in a manifest file's bytes, the
    framing (magic, position, length prefix) checked."""
    if len(raw) < MANIFEST_FOOTER + 4 or raw[-4:] != MANIFEST_MAGIC:
        raise CorruptFileError(f"manifest {name!r} ({len(raw)} bytes) does not end with the "
                               f"'LANC' magic: not a Lance manifest, or truncated")
    (pos,) = struct.unpack_from("<q", raw, len(raw) - MANIFEST_FOOTER)
    if pos < 0 or pos + 4 > len(raw) - MANIFEST_FOOTER:
        raise CorruptFileError(f"manifest {name!r}: manifest position {pos} is outside the file "
                               f"({len(raw)} bytes)")
    (n,) = struct.unpack_from("<I", raw, pos)
    if n != len(raw) - pos - 4 - MANIFEST_FOOTER:
        raise CorruptFileError(f"manifest {name!r}: the manifest at {pos} claims {n} bytes but "
                               f"{len(raw) - pos - 4 - MANIFEST_FOOTER} remain before the footer")
    return pos + 4, pos + 4 + n


def parse_manifest_message(data: bytes, name: str):
    """Decode Manifest message bytes (all of them, or a subset of their records)
    and check the version number."""
    m = pb.parse(table_pb2.Manifest, data, f"manifest {name!r}")
    if not 1 <= m.version <= _U64_MAX - 2:  # the next version must be nameable too
        raise CorruptFileError(f"manifest {name!r}: version {m.version} is not a version "
                               f"number (1..{_U64_MAX - 2})")
    return m


def parse_manifest_file(raw: bytes, name: str) -> ManifestFile:
    """Check the framing and decode the Manifest message (a manifest without a data
    storage format gets the one :func:`infer_data_format` finds)."""
    a, b = manifest_span(raw, name)
    m = parse_manifest_message(raw[a:b], name)
    if not m.HasField("data_format"):
        m.data_format.file_format = "lance"
        m.data_format.version = infer_data_format(m, name)
    return ManifestFile(m, raw, name, len(raw))


def check_storage_version(manifest, name: str) -> None:
    """What pylance checks of a manifest it commits: one recording legacy (0.1) whose
    files are all of a later version (pylance 0.16 wrote such manifests) is corrected
    to that version; one whose files mix versions is refused (nothing is written)."""
    if manifest.data_format.version not in ("0.1", "legacy") or not manifest.fragments:
        return
    try:
        actual = _files_version(manifest, name)
    except InvalidInputError as e:
        # (an OSError, as pylance's)
        raise LanceIOError(f"The dataset contains a mixture of file versions; roll it back "
                           f"to an earlier version ({e})") from None
    if actual is not None and actual is not FileVersion.LEGACY:
        manifest.data_format.version = actual.label


def _files_version(manifest, name: str):
    """The version of all the manifest's data files (None: it has none); an
    InvalidInputError when they differ."""
    found = None
    for frag in manifest.fragments:
        for df in frag.files:
            v = FileVersion.for_data_file(int(df.file_major_version),
                                          int(df.file_minor_version), name)
            if found is None:
                found = v
            elif v is not found:
                raise InvalidInputError(f"manifest {name!r}: all data files must have the same "
                                        f"version; found both {found.label} and {v.label}")
    return found


def infer_data_format(manifest, name: str) -> str:
    """The data storage version of a manifest written before it recorded one (pylance
    0.15 and older), as pylance 14 infers it: the version of the data files (all must
    agree), or with no data file the deprecated "v2" writer flag (4): set, the stable
    version (2.2); unset, legacy (0.1)."""
    found = _files_version(manifest, name)
    if found is None:
        found = (FileVersion.resolve("stable")
                 if manifest.writer_feature_flags & FLAG_USE_V2_FORMAT_DEPRECATED
                 else FileVersion.LEGACY)
    return found.label


def _varint(buf: bytes, i: int, end: int, name: str) -> tuple[int, int]:
    x = shift = 0
    while i < end and shift < 64:
        b = buf[i]
        i += 1
        x |= (b & 0x7F) << shift
        if b < 0x80:
            return x, i
        shift += 7
    raise CorruptFileError(f"manifest {name!r}: a protobuf varint at byte {i} runs past the "
                           f"message or over 10 bytes")


def message_records(buf: bytes, start: int, end: int, name: str):
    """The top-level records of the protobuf message ``buf[start:end]``, undecoded:
    ``(field number, wire type, record start, value start, record end)``, offsets into
    ``buf``. The value starts after the key (and, for wire type 2, after the length),
    so a length-delimited value is ``buf[value start:record end]``. Lets a reader skip
    or slice out a repeated field (a manifest's fragments) instead of decoding it.
    """
    i = start
    while i < end:
        key, j = _varint(buf, i, end, name)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, k = _varint(buf, j, end, name)
        elif wire == 1:
            k = j + 8
        elif wire == 5:
            k = j + 4
        elif wire == 2:
            n, j = _varint(buf, j, end, name)
            k = j + n
        else:  # groups (3, 4) are not in Lance's schema; 6 and 7 are not wire types
            raise CorruptFileError(f"manifest {name!r}: protobuf wire type {wire} (field "
                                   f"{field}) at byte {i - start} of the manifest message")
        if field == 0 or k > end:
            raise CorruptFileError(f"manifest {name!r}: protobuf record of field {field} at "
                                   f"byte {i - start} runs past the manifest message "
                                   f"({end - start} bytes)")
        yield field, wire, i, j, k
        i = k


def check_feature_flags(manifest, name: str, *, write: bool) -> None:
    """Refuse datasets that need features lancenb does not have."""
    reader = int(manifest.reader_feature_flags)
    unknown = reader & ~_KNOWN_READER_FLAGS
    if unknown:
        raise NotSupportedError(f"manifest {name!r} needs reader feature flag(s) "
                                f"{_bits(unknown)} that lancenb does not know; it cannot read "
                                f"this dataset")
    if write:
        writer = int(manifest.writer_feature_flags)
        unknown = writer & ~_KNOWN_WRITER_FLAGS
        if unknown:
            raise NotSupportedError(f"manifest {name!r} needs writer feature flag(s) "
                                    f"{_bits(unknown)} that lancenb does not know; it cannot "
                                    f"write to this dataset")


def _bits(x: int) -> list[int]:
    return [1 << i for i in range(64) if x >> i & 1]


def feature_flags_for(manifest) -> tuple[int, int]:
    """The (reader, writer) flags a manifest's contents require."""
    flags = FLAG_STABLE_ROW_IDS if manifest.next_row_id else 0
    both = FLAG_DELETION_FILES | FLAG_STABLE_ROW_IDS
    for f in manifest.fragments:  # (one pass, until both are known: every commit runs it)
        if f.HasField("deletion_file"):
            flags |= FLAG_DELETION_FILES
        if f.HasField("inline_row_ids") or f.HasField("external_row_ids"):
            flags |= FLAG_STABLE_ROW_IDS
        if flags == both:
            break
    if manifest.base_paths:  # (pylance sets it on both)
        flags |= FLAG_BASE_PATHS
    writer = flags
    if manifest.config:
        writer |= FLAG_TABLE_CONFIG
    return flags, writer


def new_manifest():
    """An empty manifest for a new dataset."""
    return table_pb2.Manifest()
