"""``ds.stats.index_stats(name)`` of a scalar index, with pylance's keys: per segment
``{"num_zones", "rows_per_zone"}`` (ZONEMAP), ``{"type", "num_blocks",
"number_of_items", "probability"}`` (BLOOMFILTER: ``num_blocks`` counts zones),
``{"min", "max", "num_pages"}`` (BTREE, values as text) or ``{"num_bitmaps"}``
(BITMAP; a JSON index gives its target's), then the fragment and row counts the
index covers and does not."""

from __future__ import annotations

from lancenb.errors import NotSupportedError
from lancenb.index.scalar.query import json_targets, open_index, view_of

__all__ = ["SCALAR_STATS_TYPES", "scalar_index_stats", "stats_summary"]

_TYPES = ("ZoneMap", "BloomFilter", "BTree", "Bitmap")
SCALAR_STATS_TYPES = _TYPES + ("Json",)  # (a JSON index: its BTREE or BITMAP target)


def _segment(kind: str, idx) -> dict:
    if kind == "ZoneMap":
        return {"num_zones": len(idx.fids), "rows_per_zone": idx.rows_per_zone}
    if kind == "BloomFilter":
        return {"type": "BloomFilter", "num_blocks": len(idx.fids),
                "number_of_items": idx.number_of_items, "probability": idx.probability}
    if kind == "BTree":
        mins = [v for v in idx.mins if v is not None]
        maxs = [v for v in idx.maxs if v is not None]
        if len(idx.pages) and (idx.null_counts > 0).any():  # (nulls sort first)
            return {"min": "NULL", "max": str(max(maxs)) if maxs else "NULL",
                    "num_pages": len(idx.pages)}
        return {"min": str(min(mins)) if mins else None,
                "max": str(max(maxs)) if maxs else None, "num_pages": len(idx.pages)}
    return {"num_bitmaps": len(idx.keys)}


def scalar_index_stats(ds, index_name: str) -> dict:
    """Statistics of the scalar index ``index_name`` of dataset ``ds`` (public API
    only), as pylance's ``index_stats``."""
    segs = [e for e in ds.list_indices() if e["name"] == index_name]
    kind = segs[0]["type"] if segs else None
    view = view_of(ds)
    label = kind
    if kind == "Json":  # (pylance: its target index's statistics, called "BTree")
        label = "BTree"
        targets = json_targets(view.uri, view.version, segs)
        segs = [dict(e, type=targets[e["uuid"]][1]) for e in segs if e["uuid"] in targets]
        kind = segs[0]["type"] if segs else None
    if kind not in _TYPES:
        raise NotSupportedError(f"index statistics of {kind} indices are not supported")
    frags = {f.fragment_id: f.count_rows() for f in ds.get_fragments()}
    per = [_segment(kind, idx) for idx in open_index(view, segs)]
    return stats_summary(label, index_name, per, segs, frags)


def stats_summary(label: str, index_name: str, per: list, segs: list, frags: dict) -> dict:
    """pylance's ``index_stats`` dict of an index of type ``label``: its segments' own
    statistics ``per``, its entries ``segs`` (``list_indices`` dicts) and the dataset's
    live row count per fragment id ``frags`` (covered and uncovered fragments and rows)."""
    covered = {int(f) for e in segs for f in e["fragment_ids"]}
    live = set(frags)
    indexed = covered & live
    return {"index_type": label, "name": index_name, "num_indices": len(per),
            "num_segments": len(per), "indices": per, "segments": per,
            "num_indexed_fragments": len(indexed),
            "num_indexed_rows": sum(frags[f] for f in indexed),
            "num_unindexed_fragments": len(live - covered),
            "num_unindexed_rows": sum(frags[f] for f in live - covered),
            "num_indexed_rows_per_delta": [sum(frags.get(int(f), 0) for f in e["fragment_ids"])
                                           for e in segs],
            "updated_at_timestamp_ms": None}
