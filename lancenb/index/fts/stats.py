"""``ds.stats.index_stats(name)`` of an INVERTED index, with pylance's keys: per
segment ``{"params", "num_tokens", "num_docs"}``, then the fragment and row counts the
index covers and does not."""

from __future__ import annotations

from lancenb.index.fts import format as fmt
from lancenb.index.scalar.common import IndexFiles
from lancenb.index.scalar.stats import stats_summary

__all__ = ["inverted_index_stats"]


def _segment(ds, e) -> dict:
    files = IndexFiles(ds.uri, e["uuid"])
    params, pids, _ = fmt.read_metadata(files)
    tokens, docs = set(), 0
    for pid in pids:
        r = files.reader(f"part_{pid}_docs.lance")
        docs += r.num_rows()
        part = fmt.read_partition(files, pid, {}, False)
        tokens.update(t for t in part.tokens)
    return {"params": params.to_dict(), "num_tokens": len(tokens), "num_docs": docs}


def inverted_index_stats(ds, index_name: str) -> dict:
    """Statistics of the INVERTED index ``index_name`` of ``ds`` (public API only)."""
    segs = [e for e in ds.list_indices() if e["name"] == index_name]
    frags = {f.fragment_id: f.count_rows() for f in ds.get_fragments()}
    per = [_segment(ds, e) for e in segs]
    return stats_summary("Inverted", index_name, per, segs, frags)
