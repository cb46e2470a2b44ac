"""Fragment metadata as plain Python objects: what workers return and drivers commit.

pylance's ``lance.fragment`` names (:class:`FragmentMetadata`, :class:`DataFile`,
:class:`DeletionFile`, :class:`RowIdMeta`, :class:`RowDatasetVersionMeta`), their
conversion to and from the manifest's ``DataFragment`` protobuf, and pylance's JSON
shape, so fragment metadata written by either library can be committed by the other::

    {"id": 0, "files": [{"fields": [0, 1], "column_indices": [0, 1],
      "file_major_version": 2, "file_minor_version": 1, "file_size_bytes": 633,
      "base_id": null, "path": "0101...lance"}],
     "overlays": [], "physical_rows": 3,
     "deletion_file": {"read_version": 1, "id": 48, "file_type": "array",
                       "num_deleted_rows": 1, "base_id": null},
     "row_id_meta": {"Inline": [10, 4, ...]},
     "created_at_version_meta": {"inline": [...]},
     "last_updated_at_version_meta": {"inline": [...]}}

Everything here is picklable (plain dataclasses of ints, strings and bytes).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

from lancenb._proto import table_pb2
from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["DataFile", "DeletionFile", "RowIdMeta", "RowDatasetVersionMeta",
           "FragmentMetadata"]

_DELETION_TYPES = {"array": table_pb2.DeletionFile.ARROW_ARRAY,
                   "bitmap": table_pb2.DeletionFile.BITMAP}
_DELETION_NAMES = {v: k for k, v in _DELETION_TYPES.items()}
_DELETION_EXT = {"array": "arrow", "bitmap": "bin"}


class _CallablePath(str):
    """A data file's path that can still be called, as ``DataFile.path()`` was in
    pylance (deprecated there: the call warns)."""

    def __call__(self) -> str:
        warnings.warn("DataFile.path() is deprecated, use DataFile.path instead",
                      DeprecationWarning, stacklevel=2)
        return str(self)

    def __reduce__(self):
        return (str, (str(self),))


@dataclass
class DataFile:
    """One data file of a fragment (pylance's ``lance.fragment.DataFile``).

    ``fields`` are the dataset field ids the file stores and ``column_indices`` the
    file column of each; ``path`` is relative to the dataset's ``data/`` directory.
    """

    path: str
    fields: list = field(default_factory=list)
    column_indices: list = field(default_factory=list)
    file_major_version: int = 0
    file_minor_version: int = 0
    file_size_bytes: int | None = None
    base_id: int | None = None

    def __setattr__(self, name, value):
        if name == "path" and isinstance(value, str):
            value = _CallablePath(value)  # path() still works, deprecated, as pylance's
        object.__setattr__(self, name, value)

    def __setstate__(self, state):  # (unpickled: path callable again)
        for k, v in state.items():
            setattr(self, k, v)

    def __repr__(self) -> str:  # pylance's (no base_id)
        return (f"DataFile(path='{self.path}', fields={self.fields}, column_indices="
                f"{self.column_indices}, file_major_version={self.file_major_version}, "
                f"file_minor_version={self.file_minor_version}, "
                f"file_size_bytes={self.file_size_bytes})")

    def field_ids(self) -> list:
        """Deprecated (as pylance's): :attr:`fields`."""
        warnings.warn("DataFile.field_ids is deprecated, use DataFile.fields instead",
                      DeprecationWarning, stacklevel=2)
        return self.fields

    def to_json(self) -> dict:
        """pylance's JSON keys (``path`` last, as pylance's ``to_json`` puts it)."""
        return {"fields": [int(x) for x in self.fields],
                "column_indices": [int(x) for x in self.column_indices],
                "file_major_version": int(self.file_major_version),
                "file_minor_version": int(self.file_minor_version),
                "file_size_bytes": self.file_size_bytes, "base_id": self.base_id,
                "path": str(self.path)}

    @classmethod
    def from_pb(cls, pb) -> "DataFile":
        """The data file of a ``lance.table.DataFile`` protobuf."""
        return cls(pb.path, list(pb.fields), list(pb.column_indices), int(pb.file_major_version),
                   int(pb.file_minor_version), int(pb.file_size_bytes) or None,
                   int(pb.base_id) if pb.HasField("base_id") else None)

    def to_pb(self):
        """This data file as a ``lance.table.DataFile`` protobuf."""
        pb = table_pb2.DataFile(path=str(self.path), fields=self.fields,
                                column_indices=self.column_indices,
                                file_major_version=int(self.file_major_version),
                                file_minor_version=int(self.file_minor_version),
                                file_size_bytes=int(self.file_size_bytes or 0))
        if self.base_id is not None:
            pb.base_id = int(self.base_id)
        return pb


@dataclass
class DeletionFile:
    """A fragment's deletion file (pylance's ``DeletionFile``): ``file_type`` is
    ``"array"`` (an Arrow IPC file of offsets) or ``"bitmap"`` (a roaring bitmap)."""

    read_version: int
    id: int
    file_type: str
    num_deleted_rows: int
    base_id: int | None = None

    def asdict(self) -> dict:
        """The fields as pylance's JSON names them."""
        return {"read_version": int(self.read_version), "id": int(self.id),
                "file_type": self.file_type, "num_deleted_rows": int(self.num_deleted_rows),
                "base_id": self.base_id}

    def json(self) -> str:
        """This deletion file as pylance's JSON text."""
        return json.dumps(self.asdict(), separators=(",", ":"))

    def path(self, fragment_id: int) -> str:
        """The file's path relative to the dataset root."""
        return (f"_deletions/{fragment_id}-{self.read_version}-{self.id}."
                f"{_DELETION_EXT[self.file_type]}")

    @classmethod
    def from_pb(cls, pb) -> "DeletionFile":
        """The deletion file of a ``lance.table.DeletionFile`` protobuf."""
        return cls(int(pb.read_version), int(pb.id), _DELETION_NAMES.get(pb.file_type, "array"),
                   int(pb.num_deleted_rows), int(pb.base_id) if pb.HasField("base_id") else None)

    def to_pb(self):
        """This deletion file as a ``lance.table.DeletionFile`` protobuf."""
        if self.file_type not in _DELETION_TYPES:
            raise InvalidInputError(f"deletion file type must be 'array' or 'bitmap', not "
                                    f"{self.file_type!r}")
        pb = table_pb2.DeletionFile(file_type=_DELETION_TYPES[self.file_type],
                                    read_version=int(self.read_version), id=int(self.id),
                                    num_deleted_rows=int(self.num_deleted_rows))
        if self.base_id is not None:
            pb.base_id = int(self.base_id)
        return pb


@dataclass
class _Sequence:
    """Where a per-row sequence is stored: ``inline`` bytes or an ``external``
    ``(path, offset, size)`` range."""

    inline: bytes | None = None
    external: tuple | None = None

    _INLINE = "inline"
    _EXTERNAL = "external"

    def asdict(self) -> dict:
        if self.inline is not None:
            return {self._INLINE: list(self.inline)}
        path, offset, size = self.external
        return {self._EXTERNAL: {"path": path, "offset": int(offset), "size": int(size)}}

    def json(self) -> str:
        return json.dumps(self.asdict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict):
        if not isinstance(d, dict) or len(d) != 1:
            raise InvalidInputError(f"{cls.__name__}: expected one of {{{cls._INLINE!r}: "
                                    f"[bytes]}} or {{{cls._EXTERNAL!r}: {{path, offset, size}}}}, "
                                    f"got {d!r}")
        (k, v), = d.items()
        if k.lower() == "inline":
            return cls(inline=bytes(v))
        if k.lower() == "external":
            return cls(external=(v["path"], int(v["offset"]), int(v["size"])))
        raise NotSupportedError(f"{cls.__name__}: unknown variant {k!r}")

    @classmethod
    def from_json(cls, text: str):
        return cls.from_dict(json.loads(text))


class RowIdMeta(_Sequence):
    """Where a fragment's stable row ids are (pylance's ``RowIdMeta``; JSON
    ``{"Inline": [bytes]}`` or ``{"External": {...}}``)."""

    _INLINE = "Inline"
    _EXTERNAL = "External"


class RowDatasetVersionMeta(_Sequence):
    """Per-row created/last-updated versions (JSON ``{"inline": [bytes]}``)."""


@dataclass
class FragmentMetadata:
    """Metadata of one fragment (pylance's ``lance.fragment.FragmentMetadata``).

    What a worker returns from :func:`lancenb.fragment.write_fragments` or
    :meth:`LanceFragment.create`, and what :class:`lancenb.LanceOperation` operations
    carry to :meth:`lancenb.LanceDataset.commit`.

    Examples
    --------
    >>> meta = FragmentMetadata.from_json(json.dumps(other.to_json()))  # doctest: +SKIP
    """

    id: int
    files: list
    physical_rows: int
    deletion_file: DeletionFile | None = None
    row_id_meta: RowIdMeta | None = None
    created_at_version_meta: RowDatasetVersionMeta | None = None
    last_updated_at_version_meta: RowDatasetVersionMeta | None = None
    overlays: list = field(default_factory=list)

    def data_files(self) -> list:
        """Deprecated (as pylance's): :attr:`files`."""
        warnings.warn("FragmentMetadata.data_files is deprecated. Use .files instead.",
                      DeprecationWarning, stacklevel=2)
        return self.files

    @property
    def num_deletions(self) -> int:
        """Rows deleted by the deletion file (0 without one)."""
        return int(self.deletion_file.num_deleted_rows) if self.deletion_file else 0

    @property
    def num_rows(self) -> int:
        """Live rows: physical rows less deletions."""
        return int(self.physical_rows) - self.num_deletions

    def to_json(self) -> dict:
        """A JSON-serialisable dict in pylance's shape (``FragmentMetadata.from_json``
        of either library reads it back after ``json.dumps``)."""
        def opt(x):
            return x.asdict() if x is not None else None

        return {"id": int(self.id), "files": [f.to_json() for f in self.files],
                "overlays": [], "physical_rows": None if self.physical_rows is None
                else int(self.physical_rows),  # (None: not counted yet, in progress files)
                "deletion_file": opt(self.deletion_file), "row_id_meta": opt(self.row_id_meta),
                "created_at_version_meta": opt(self.created_at_version_meta),
                "last_updated_at_version_meta": opt(self.last_updated_at_version_meta)}

    @staticmethod
    def from_json(json_data) -> "FragmentMetadata":
        """Parse :meth:`to_json` output (a JSON string, as pylance takes, or the dict)."""
        d = json.loads(json_data) if isinstance(json_data, (str, bytes)) else json_data
        try:
            if d.get("overlays"):
                raise NotSupportedError(f"fragment {d['id']}: data overlay files are not "
                                        f"supported by lancenb")

            def opt(cls, key):
                v = d.get(key)
                return None if v is None else cls.from_dict(v)

            df = d.get("deletion_file")
            return FragmentMetadata(
                id=int(d["id"]), files=[DataFile(**f) for f in d["files"]],
                physical_rows=None if d["physical_rows"] is None else int(d["physical_rows"]),
                deletion_file=DeletionFile(**df) if df is not None else None,
                row_id_meta=opt(RowIdMeta, "row_id_meta"),
                created_at_version_meta=opt(RowDatasetVersionMeta, "created_at_version_meta"),
                last_updated_at_version_meta=opt(RowDatasetVersionMeta,
                                                 "last_updated_at_version_meta"))
        except (KeyError, TypeError) as e:
            raise InvalidInputError(f"not fragment metadata JSON ({e!r}): {d!r:.200}") from e

    @classmethod
    def from_pb(cls, pb) -> "FragmentMetadata":
        """From a manifest ``DataFragment`` protobuf."""
        def seq(kls, oneof):
            which = pb.WhichOneof(oneof)
            if which is None:
                return None
            v = getattr(pb, which)
            if which.startswith("inline"):
                return kls(inline=bytes(v))
            return kls(external=(v.path, int(v.offset), int(v.size)))

        return cls(int(pb.id), [DataFile.from_pb(f) for f in pb.files], int(pb.physical_rows),
                   DeletionFile.from_pb(pb.deletion_file) if pb.HasField("deletion_file")
                   else None,
                   seq(RowIdMeta, "row_id_sequence"),
                   seq(RowDatasetVersionMeta, "created_at_version_sequence"),
                   seq(RowDatasetVersionMeta, "last_updated_at_version_sequence"))

    def to_pb(self):
        """The manifest ``DataFragment`` protobuf."""
        if self.overlays:
            raise NotSupportedError(f"fragment {self.id}: data overlay files are not supported "
                                    f"by lancenb")
        pb = table_pb2.DataFragment(id=int(self.id), physical_rows=int(self.physical_rows))
        for f in self.files:
            if not isinstance(f, DataFile):
                raise InvalidInputError(f"fragment {self.id}: files must be DataFile objects, "
                                        f"not {type(f).__name__}")
            pb.files.append(f.to_pb())
        if self.deletion_file is not None:
            pb.deletion_file.CopyFrom(self.deletion_file.to_pb())
        for meta, inline, external in (
                (self.row_id_meta, "inline_row_ids", "external_row_ids"),
                (self.created_at_version_meta, "inline_created_at_versions",
                 "external_created_at_versions"),
                (self.last_updated_at_version_meta, "inline_last_updated_at_versions",
                 "external_last_updated_at_versions")):
            if meta is None:
                continue
            if meta.inline is not None:
                setattr(pb, inline, bytes(meta.inline))
            else:
                path, offset, size = meta.external
                getattr(pb, external).CopyFrom(table_pb2.ExternalFile(path=path, offset=offset,
                                                                      size=size))
        return pb


def as_pb(frag):
    """A ``DataFragment`` protobuf from :class:`FragmentMetadata`, pylance's own
    ``FragmentMetadata`` (through its JSON), or a protobuf (copied)."""
    if isinstance(frag, FragmentMetadata):
        return frag.to_pb()
    if isinstance(frag, table_pb2.DataFragment):
        out = table_pb2.DataFragment()
        out.CopyFrom(frag)
        return out
    if hasattr(frag, "to_json") and hasattr(frag, "physical_rows"):
        return FragmentMetadata.from_json(json.dumps(frag.to_json())).to_pb()
    raise InvalidInputError(f"expected FragmentMetadata, not {type(frag).__name__}")


def is_legacy_file(df) -> bool:
    """Whether a DataFile (protobuf or :class:`DataFile`) is a 0.1 file: major 0 with
    minor 0-2 (0.3 is 2.0, as older manifests record it)."""
    return int(df.file_major_version) == 0 and int(df.file_minor_version) < 3
