"""The indices a dataset's manifest lists (pylance's ``list_indices``), read only.

lancenb neither builds nor uses indices; it keeps the index section of the manifest
through its commits, and this module describes what is there: name, type, uuid,
fields, the dataset version each was built at and the fragments it covers. The type
comes from the index details' protobuf type (``...BTreeIndexDetails`` -> ``BTree``);
a vector index's details are empty, so its type is read from the index file's
``lance:index`` metadata (``IVF_PQ``, ``IVF_HNSW_SQ``, ...), as pylance reports it.
"""

from __future__ import annotations

import json

from pyroaring import BitMap

from lancenb._proto import table_pb2
from lancenb.encodings import pb
from lancenb.errors import CorruptFileError, LanceError

__all__ = ["list_indices", "has_indices"]

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


def _vector_type(store, uuid: str) -> str:
    """A vector index's type from its index file's metadata; "Vector" if unreadable."""
    from lancenb.file.reader import LanceFileReader  # lazy: only vector indices need it

    try:
        r = LanceFileReader(store.uri_of(f"{INDICES_DIR}/{uuid}/index.idx"),
                            storage_options=store.storage_options)
        info = json.loads((r.schema_full.metadata or {}).get(b"lance:index", b"{}"))
        t = info.get("type") if isinstance(info, dict) else None
        return t if isinstance(t, str) and t else "Vector"
    except (LanceError, ValueError, TypeError):
        return "Vector"


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


def list_indices(mf, store) -> list[dict]:
    """pylance's ``list_indices()`` for the manifest file ``mf``: one dict per index
    (name, type, uuid, fields, version, fragment_ids as a ``pyroaring.BitMap``,
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
            frags = BitMap.deserialize(bytes(m.fragment_bitmap)) if m.fragment_bitmap \
                else BitMap()
        except Exception as e:  # noqa: BLE001 - pyroaring raises plain ValueError etc.
            raise CorruptFileError(f"manifest {mf.name!r}: index {m.name!r} has a fragment "
                                   f"bitmap that is not a roaring bitmap: {e}") from e
        out.append({"name": m.name, "type": kind or "Unknown", "uuid": uuid,
                    "fields": [paths.get(int(f), str(f)) for f in m.fields],
                    "version": int(m.dataset_version), "fragment_ids": frags,
                    "base_id": int(m.base_id) if m.HasField("base_id") else None})
    return out
