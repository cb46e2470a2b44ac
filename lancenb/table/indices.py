"""Index metadata: the indices a dataset's manifest lists (pylance's
``list_indices``), and the objects a CreateIndex commit carries.

The manifest's index section (an ``IndexSection`` protobuf: one ``IndexMetadata`` per
index segment) gives each index's name, uuid, fields, the dataset version it was built
at, the fragments it covers (a serialised roaring bitmap), its details (a protobuf
``Any`` whose type names the index type), its version, creation time (ms since the
epoch) and files. :func:`list_indices` describes it as pylance does: the type comes
from the details' protobuf type (``...BTreeIndexDetails`` -> ``BTree``); a vector
index's details name no type, so its type is read from the index file's
``lance:index`` metadata (``IVF_PQ``, ``IVF_HNSW_SQ``, ...); an index committed without
details is ``Unknown``.

:class:`Index` and :class:`IndexFile` are pylance's ``lance.dataset.Index`` /
``IndexFile``; :class:`CreateIndex` is the operation (``LanceOperation.CreateIndex``)
that commits new segments and removes old ones; what each commit does to the index
section is decided in :func:`lancenb.table.transaction.next_indices`.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyroaring import BitMap

from lancenb._proto import table_pb2, transaction_pb2
from lancenb.encodings import pb
from lancenb.errors import CorruptFileError, InvalidInputError, LanceError, NotSupportedError

__all__ = ["list_indices", "FragmentIds", "has_indices", "Index", "IndexFile", "CreateIndex",
           "index_to_pb", "index_from_pb", "parse_section", "section_bytes"]

_DETAILS_SUFFIX = "IndexDetails"
_VECTOR = "VectorIndexDetails"
INDICES_DIR = "_indices"


def _field_paths(fields) -> dict[int, str]:
    """Field id -> dotted path (``s.a``) of every field in the manifest."""
    by_id = {int(f.id): f for f in fields}
    out: dict[int, str] = {}
    for fid, f in by_id.items():
        parts, cur, seen = [f.name], f, {fid}
        while cur.parent_id >= 0 and cur.parent_id in by_id and cur.parent_id not in seen:
            seen.add(cur.parent_id)
            cur = by_id[cur.parent_id]
            parts.append(cur.name)
        out[fid] = ".".join(reversed(parts))
    return out


# index file -> its vector index type (index files never change once written; every
# list_indices call, and so every filtered scan of an indexed dataset, asks)
_VECTOR_TYPES: dict[str, str] = {}


def _vector_type(store, uuid: str) -> str:
    """A vector index's type from its index file's metadata; "Vector" if unreadable."""
    key = store.uri_of(f"{INDICES_DIR}/{uuid}/index.idx")
    got = _VECTOR_TYPES.get(key)
    if got is None:
        got = _read_vector_type(store, uuid)
        if got != "Vector" and len(_VECTOR_TYPES) < 4096:
            _VECTOR_TYPES[key] = got
    return got


def _read_vector_type(store, uuid: str) -> str:
    from lancenb.file.reader import LanceFileReader  # lazy: only vector indices need it

    try:
        r = LanceFileReader(store.uri_of(f"{INDICES_DIR}/{uuid}/index.idx"),
                            storage_options=store.storage_options)
        info = json.loads((r.schema_full.metadata or {}).get(b"lance:index", b"{}"))
        t = info.get("type") if isinstance(info, dict) else None
        return t if isinstance(t, str) and t else "Vector"
    except (LanceError, ValueError, TypeError):
        return "IVF_PQ" if _legacy_file(store, uuid) else "Vector"


def _legacy_file(store, uuid: str) -> bool:
    """Whether the index file is pylance's legacy single-file IVF_PQ (it ends in the
    footer ``<i64 position> 0 1 LANC``; see lancenb.index.vector.ivfpb)."""
    from lancenb.io import open_reader

    try:
        r = open_reader(store.uri_of(f"{INDICES_DIR}/{uuid}/index.idx"),
                        store.storage_options)
        try:
            size = r.size()
            tail = bytes(r.read_ranges([(max(0, size - 8), min(8, size))])[0])
        finally:
            r.close()
    except (LanceError, OSError):
        return False
    return tail == b"\x00\x00\x01\x00LANC"


def _uuid_text(raw) -> str:
    h = bytes(raw).hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" if len(h) == 32 else h


def _section(mf):
    raw = mf.index_section_bytes()
    if raw is None:
        return []
    return pb.parse(table_pb2.IndexSection, raw,
                    f"manifest {mf.name!r}: index section").indices


def has_indices(mf) -> bool:
    """Whether the manifest file ``mf`` lists any index (no index file is read)."""
    return len(_section(mf)) > 0


class FragmentIds(BitMap):
    """The fragments an index covers, as ``list_indices()`` gives them: a roaring bitmap
    that also equals the ``set`` of its ids (``ids == {0, 1}``), as pylance's
    ``lance.bitmap.Bitmap`` does."""

    def __eq__(self, other):
        if isinstance(other, (set, frozenset)):
            return set(self) == other
        return BitMap.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]  (mutable, as BitMap)


def list_indices(mf, store) -> list[dict]:
    """pylance's ``list_indices()`` for the manifest file ``mf``: one dict per index
    (name, type, uuid, fields, version, fragment_ids as :class:`FragmentIds`,
    base_id)."""
    indices = _section(mf)
    paths = _field_paths(mf.manifest.fields) if indices else {}
    out = []
    for m in indices:
        kind = m.index_details.type_url.rsplit("/", 1)[-1].rsplit(".", 1)[-1]
        uuid = _uuid_text(m.uuid.uuid) if m.HasField("uuid") else ""
        if kind == _VECTOR:
            kind = _vector_type(store, uuid)
        elif kind.endswith(_DETAILS_SUFFIX):
            kind = kind[: -len(_DETAILS_SUFFIX)]
        try:
            frags = FragmentIds(BitMap.deserialize(bytes(m.fragment_bitmap))
                                if m.fragment_bitmap else ())
        except Exception as e:  # noqa: BLE001 - pyroaring raises plain ValueError etc.
            raise CorruptFileError(f"manifest {mf.name!r}: index {m.name!r} has a fragment "
                                   f"bitmap that is not a roaring bitmap: {e}") from e
        if not kind and uuid and store.exists(f"{INDICES_DIR}/{uuid}/metadata.lance"):
            kind = "Inverted"  # (committed without details: a full-text index's files)
        out.append({"name": m.name, "type": kind or "Unknown", "uuid": uuid,
                    "fields": [paths.get(int(f), str(f)) for f in m.fields],
                    "version": int(m.dataset_version), "fragment_ids": frags,
                    "base_id": int(m.base_id) if m.HasField("base_id") else None})
    return out


# -- index metadata as pylance's python objects, and the index section of a commit --


@dataclass
class IndexFile:
    """A file of an index segment (pylance's ``lance.dataset.IndexFile``)."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """An index segment, as :class:`~lancenb.LanceOperation.CreateIndex` takes it
    (pylance's ``lance.dataset.Index``). ``fragment_ids``: the fragments it covers (a
    set, list or ``pyroaring.BitMap``); ``index_details``: ``(type_url, bytes)`` of
    the details protobuf (None: unknown, listed with type ``Unknown`` as pylance
    does); ``created_at``: a ``datetime``."""

    uuid: str
    name: str
    fields: list
    dataset_version: int
    fragment_ids: object
    index_version: int
    created_at: datetime | None = None
    base_id: int | None = None
    files: list | None = None
    index_details: tuple | None = None
    covering_fields: list = field(default_factory=list)


def _uuid_bytes(text) -> bytes:
    try:
        return uuidlib.UUID(str(text)).bytes
    except ValueError as e:
        raise InvalidInputError(f"index uuid {text!r} is not a UUID") from e


def index_to_pb(idx) -> table_pb2.IndexMetadata:
    """The manifest's ``IndexMetadata`` of an :class:`Index` (lancenb's or pylance's,
    or the protobuf itself)."""
    if isinstance(idx, table_pb2.IndexMetadata):
        return idx
    for attr in ("uuid", "name", "fields", "dataset_version", "fragment_ids",
                 "index_version"):
        if not hasattr(idx, attr):
            raise InvalidInputError(f"an index must be a lancenb.dataset.Index, not "
                                    f"{type(idx).__name__} (no {attr!r})")
    if list(getattr(idx, "covering_fields", None) or []):
        raise NotSupportedError(f"index {idx.name!r}: covering fields are not supported by "
                                f"lancenb")
    m = table_pb2.IndexMetadata(name=str(idx.name), fields=[int(f) for f in idx.fields],
                                dataset_version=int(idx.dataset_version),
                                index_version=int(idx.index_version))
    m.uuid.uuid = _uuid_bytes(idx.uuid)
    frags = idx.fragment_ids
    if frags is not None:
        ids = sorted(int(f) for f in frags)
        if ids and (ids[0] < 0 or ids[-1] > 0xFFFFFFFF):
            raise InvalidInputError(f"index {idx.name!r}: fragment ids must be u32")
        m.fragment_bitmap = BitMap(ids).serialize()
    details = getattr(idx, "index_details", None)
    if details is not None:
        type_url, value = details
        m.index_details.type_url = str(type_url)
        m.index_details.value = bytes(value or b"")
    created = getattr(idx, "created_at", None)
    if created is not None:
        if created.tzinfo is None:
            created = created.replace(tzinfo=timezone.utc)
        m.created_at = int(created.timestamp() * 1000)
    base_id = getattr(idx, "base_id", None)
    if base_id is not None:
        m.base_id = int(base_id)
    for f in getattr(idx, "files", None) or []:
        m.files.add(path=str(f.path), size_bytes=int(f.size_bytes))
    return m


def index_from_pb(m) -> Index:
    """An :class:`Index` of a manifest ``IndexMetadata``."""
    frags = BitMap.deserialize(bytes(m.fragment_bitmap)) if m.fragment_bitmap else BitMap()
    created = datetime.fromtimestamp(m.created_at / 1000, timezone.utc) \
        if m.HasField("created_at") else None
    return Index(uuid=_uuid_text(m.uuid.uuid), name=m.name, fields=list(m.fields),
                 dataset_version=int(m.dataset_version), fragment_ids=frags,
                 index_version=int(m.index_version), created_at=created,
                 base_id=int(m.base_id) if m.HasField("base_id") else None,
                 files=[IndexFile(f.path, int(f.size_bytes)) for f in m.files] or None,
                 index_details=(m.index_details.type_url, bytes(m.index_details.value))
                 if m.HasField("index_details") else None)


def parse_section(raw: bytes | None, where: str) -> list:
    """The ``IndexMetadata`` list of raw index section bytes (None: no section)."""
    if raw is None:
        return []
    return list(pb.parse(table_pb2.IndexSection, raw, f"{where}: index section").indices)


def section_bytes(indices: list) -> bytes | None:
    """The index section holding ``indices`` (None when there are none)."""
    if not indices:
        return None
    return table_pb2.IndexSection(indices=indices).SerializeToString()


@dataclass
class CreateIndex:
    """Commit index segments ``new_indices`` (each replaces the indices of its name)
    and remove ``removed_indices`` (by uuid): pylance's ``LanceOperation.CreateIndex``
    (that class is this one, in the dataset layer's ``LanceOperation``).

    Examples
    --------
    >>> op = CreateIndex(new_indices=[Index(uuid=str(uuidlib.uuid4()), name="x_idx",
    ...                  fields=[0], dataset_version=1, fragment_ids={0},
    ...                  index_version=0)], removed_indices=[])
    >>> [index_to_pb(i).name for i in op.new_indices]
    ['x_idx']
    """

    new_indices: list
    removed_indices: list = field(default_factory=list)

    def to_pb(self):
        """The ``CreateIndex`` transaction protobuf."""
        if not isinstance(self.new_indices, (list, tuple)) or \
                not isinstance(self.removed_indices, (list, tuple)):
            raise InvalidInputError("CreateIndex takes lists of Index objects")
        return transaction_pb2.Transaction.CreateIndex(
            new_indices=[index_to_pb(i) for i in self.new_indices],
            removed_indices=[index_to_pb(i) for i in self.removed_indices])
