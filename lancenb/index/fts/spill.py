"""Posting runs of an INVERTED index build in bounded memory.

The build tokenizes its input chunk by chunk; each chunk gives a run of postings
``(token id, document id, frequency)`` sorted by token then document (with each
posting's positions, when kept). Runs stay in memory until they hold more than their
budget, then are merged (one stable sort by token: chunks come in document order) and
spilled to a temporary folder as ``.npy`` files. At the end the postings are read back
token range by token range (each range at most ``max_postings`` postings, one token
excepted), every spilled run memory-mapped and sliced by binary search on its sorted
token ids, so the final posting lists never have to be in memory at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

__all__ = ["Runs", "chunk_postings", "regroup_positions"]

# bytes per posting in memory: token, document and frequency as uint32
POSTING_BYTES = 12


def regroup_positions(freqs: np.ndarray, positions: np.ndarray, order: np.ndarray
                      ) -> np.ndarray:
    """``positions`` (each posting's ``freqs[i]`` values, back to back) with the
    postings taken in ``order``."""
    starts = np.zeros(len(freqs) + 1, np.int64)
    np.cumsum(freqs, out=starts[1:])
    f = freqs[order].astype(np.int64)
    total = int(f.sum())
    out_starts = np.zeros(len(f) + 1, np.int64)
    np.cumsum(f, out=out_starts[1:])
    within = np.arange(total, dtype=np.int64) - np.repeat(out_starts[:-1], f)
    return positions[np.repeat(starts[:-1][order], f) + within]


def chunk_postings(token_ids: np.ndarray, doc: np.ndarray, position: np.ndarray | None,
                   ndocs: int):
    """A chunk's tokens (in document then position order) as postings sorted by
    ``(token, document)``: ``(tokens, documents, frequencies, positions or None)``."""
    key = token_ids.astype(np.int64) * max(ndocs, 1) + doc
    # (positions stay in order within a posting only with a stable sort)
    order = np.argsort(key, kind="stable" if position is not None else None)
    key = key[order]
    if len(key):
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    else:
        starts = np.zeros(0, np.int64)
    freqs = np.diff(np.r_[starts, len(key)]).astype(np.uint32)
    first = order[starts]
    tok = token_ids[first].astype(np.uint32)
    d = doc[first].astype(np.uint32)
    pos = position[order].astype(np.uint32) if position is not None else None
    return tok, d, freqs, pos


class Runs:
    """Sorted posting runs under a memory budget (``budget`` bytes for the runs kept in
    memory; more are merged and spilled to a temporary folder)."""

    def __init__(self, budget: int, with_positions: bool):
        self.budget = max(int(budget), 1 << 20)
        self.with_positions = with_positions
        self.mem: list[tuple] = []
        self.mem_bytes = 0
        self.spilled: list[dict] = []
        self.tmp: str | None = None
        self.counts = np.zeros(0, np.int64)  # postings per token id, over every run

    def add(self, tok, doc, freqs, pos) -> None:
        if len(tok) == 0:
            return
        c = np.bincount(tok, minlength=len(self.counts))
        if len(c) > len(self.counts):
            c[:len(self.counts)] += self.counts
            self.counts = c.astype(np.int64)
        else:
            self.counts += c
        self.mem.append((tok, doc, freqs, pos))
        self.mem_bytes += POSTING_BYTES * len(tok) + (4 * len(pos) if pos is not None else 0)
        if self.mem_bytes > self.budget:
            self._spill()

    def merged(self):
        """The in-memory runs as one run sorted by ``(token, document)``."""
        if not self.mem:
            z = np.zeros(0, np.uint32)
            return z, z, z, (z if self.with_positions else None)
        if len(self.mem) == 1:
            return self.mem[0]
        tok = np.concatenate([r[0] for r in self.mem])
        order = np.argsort(tok, kind="stable")
        freqs = np.concatenate([r[2] for r in self.mem])
        pos = None
        if self.with_positions:
            pos = regroup_positions(freqs, np.concatenate([r[3] for r in self.mem]), order)
        doc = np.concatenate([r[1] for r in self.mem])[order]
        return tok[order], doc, freqs[order], pos

    def _spill(self) -> None:
        """Merge the in-memory runs into one (a stable sort by token: they are in
        document order) and write it to its own files: few runs to slice per token
        range however large the input."""
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="lancenb_fts_")
        tok, doc, freqs, pos = self.merged()
        self.mem, self.mem_bytes = [], 0
        base = os.path.join(self.tmp, f"run{len(self.spilled)}_")
        names = {"tok": tok, "doc": doc, "freq": freqs}
        if pos is not None:
            pcum = np.zeros(len(freqs) + 1, np.int64)
            np.cumsum(freqs, out=pcum[1:])
            names.update(pos=pos, pcum=pcum)
        for k, v in names.items():
            np.save(base + k + ".npy", v)
        self.spilled.append({k: base + k + ".npy" for k in names})

    @property
    def did_spill(self) -> bool:
        return bool(self.spilled)

    def ranges(self, max_postings: int):
        """Spill what is left, then yield ``(first token, end token, CSR offsets,
        documents, frequencies, position offsets, positions)`` for consecutive token
        ranges of at most ``max_postings`` postings (a longer token alone)."""
        if self.mem:
            self._spill()
        runs = [{k: np.load(p, mmap_mode="r") for k, p in r.items()} for r in self.spilled]
        cum = np.zeros(len(self.counts) + 1, np.int64)
        np.cumsum(self.counts, out=cum[1:])
        ntok = len(self.counts)
        lo = 0
        while lo < ntok:
            hi = int(np.searchsorted(cum, cum[lo] + max(int(max_postings), 1), "right")) - 1
            hi = min(max(hi, lo + 1), ntok)
            parts = []
            for r in runs:
                s, e = np.searchsorted(r["tok"], [lo, hi], "left")
                parts.append((r, int(s), int(e)))
            tok = np.concatenate([np.asarray(r["tok"][s:e]) for r, s, e in parts])
            order = np.argsort(tok, kind="stable")
            doc = np.concatenate([np.asarray(r["doc"][s:e]) for r, s, e in parts])[order]
            f_all = np.concatenate([np.asarray(r["freq"][s:e]) for r, s, e in parts])
            counts = np.bincount(tok.astype(np.int64) - lo, minlength=hi - lo)
            offsets = np.zeros(hi - lo + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            pos_offsets = positions = None
            if self.with_positions:
                p_all = np.concatenate([np.asarray(r["pos"][int(r["pcum"][s]):int(r["pcum"][e])])
                                        for r, s, e in parts])
                positions = regroup_positions(f_all, p_all, order)
                pos_offsets = np.zeros(len(order) + 1, np.int64)
                np.cumsum(f_all[order], out=pos_offsets[1:])
            yield lo, hi, offsets, doc, f_all[order], pos_offsets, positions
            lo = hi

    def close(self) -> None:
        self.mem = []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
