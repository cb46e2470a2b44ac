"""Repetition and definition levels (Lance 2.1/2.2 structural encoding).

A nested column is described by its *layers*, innermost first: layer 0 is the leaf,
each further layer the next enclosing struct ("item" layer) or list. Every layer has
a validity (one byte per entry, 1 = valid; an empty array means all valid); a list
layer also has offsets into the entries of the layer below it.

Shredding walks every row depth first and emits one ``(rep, def)`` pair per *level*:

* a leaf value (``def = 0``), a null item (the layer's null level), or a null or
  empty list (its null / empty level). Null and empty lists, and everything under a
  null struct that sits above a list, are *invisible*: they have no value slot.
* ``rep``: ``max_rep`` starts a row; a list whose rep number is ``m`` (innermost list
  1, outermost ``max_rep``) gives its second and later children ``m - 1``; a first
  child inherits the rep of its parent.

Example, ``list<int32>`` rows ``[[1, 2], [], None]`` with layers
``[ALL_VALID_ITEM, NULL_AND_EMPTY_LIST]`` (null list = 1, empty list = 2):
rep ``1 0 1 1``, def ``0 0 2 1``, value slots at levels 0 and 1.

Unshredding reverses it: each level closes at the layer its def names and opens new
entries from the layer its rep names down to there (down to the next list below, for
a null struct, whose lower entries are null too). The kernels validate levels from
files: a level out of range, or one that continues a list that is not open, returns
a negative status instead of decoding garbage.

Both directions are "count, allocate, fill": call once with ``fill=False`` to get the
sizes, then again with outputs of those sizes.
"""

import numpy as np

from ._jit import kernel

OK = 0
BAD_OFFSETS = -1     # shred: an offset points outside the layer below
BAD_LEVEL = -2       # unshred: a rep or def level above the maximum
BAD_NESTING = -3     # unshred: a level continues a list that is not open (or the first
                     # level does not start a row)

__all__ = ["shred", "unshred", "OK", "BAD_OFFSETS", "BAD_LEVEL", "BAD_NESTING"]


@kernel
def shred(is_list, valid, valid_start, offs, offs_start, length, null_level, empty_level,
          rep_num, max_rep, fill, rep_out, def_out, leaf_out, has_null, has_empty, counts):
    """Levels of the rows of layer ``k - 1`` (the outermost).

    Per layer ``j`` (innermost first): ``is_list[j]``; validity
    ``valid[valid_start[j]:][:length[j]]`` (``valid_start[j] < 0``: all valid);
    offsets ``offs[offs_start[j]:][:length[j] + 1]`` for lists; ``null_level[j]``,
    ``empty_level[j]`` and ``rep_num[j]`` as the layers are labelled.

    Counting (``fill`` false) sets ``has_null[j]`` / ``has_empty[j]`` where some
    reachable entry is null (a null struct also nulls the entries below it, down to
    the next list) or an empty list. Filling writes ``rep_out`` (if non-empty),
    ``def_out`` (if non-empty) and ``leaf_out``: for each visible level, the leaf
    position its value slot takes. ``counts`` gets ``[levels, visible levels]``.
    """
    k = is_list.shape[0]
    top = k - 1
    first_list = k
    for j in range(k):
        if is_list[j]:
            first_list = j
            break
    for j in range(k):
        if is_list[j]:
            if j == 0 or offs_start[j] < 0:
                return BAD_OFFSETS
            o = offs_start[j]
            if offs[o] < 0 or offs[o + length[j]] > length[j - 1]:
                return BAD_OFFSETS
            for p in range(length[j]):
                if offs[o + p + 1] < offs[o + p]:
                    return BAD_OFFSETS
    write_rep = rep_out.shape[0] > 0
    write_def = def_out.shape[0] > 0
    nxt = np.zeros(k, np.int64)
    end = np.zeros(k, np.int64)
    stack = np.zeros(k, np.int64)
    n = 0
    nvis = 0
    for row in range(length[top]):
        j = top
        p = row
        rep = max_rep
        sp = 0
        while True:
            # go down from (j, p) until a level is emitted
            level = 0
            visible = True
            while True:
                if j < 0:
                    break
                vs = valid_start[j]
                ok = vs < 0 or valid[vs + p] != 0
                if not is_list[j]:
                    if ok:
                        j -= 1
                        continue
                    level = null_level[j]
                    visible = j < first_list
                    i = j
                    while i >= 0:
                        has_null[i] = 1
                        if is_list[i]:
                            break
                        i -= 1
                    break
                if not ok:
                    has_null[j] = 1
                    level = null_level[j]
                    visible = False
                    break
                o = offs_start[j]
                a = offs[o + p]
                b = offs[o + p + 1]
                if a == b:
                    has_empty[j] = 1
                    level = empty_level[j]
                    visible = False
                    break
                nxt[j] = a + 1
                end[j] = b
                stack[sp] = j
                sp += 1
                j -= 1
                p = a
            if fill:
                if write_rep:
                    rep_out[n] = rep
                if write_def:
                    def_out[n] = level
                if visible:
                    leaf_out[nvis] = p
            n += 1
            if visible:
                nvis += 1
            # back up to the innermost list with children left
            while sp > 0:
                jl = stack[sp - 1]
                if nxt[jl] < end[jl]:
                    break
                sp -= 1
            if sp == 0:
                break
            jl = stack[sp - 1]
            p = nxt[jl]
            nxt[jl] += 1
            rep = rep_num[jl] - 1
            j = jl - 1
    counts[0] = n
    counts[1] = nvis
    return OK


@kernel
def unshred(rep, defs, num_levels, max_rep, max_def, is_list, term, term_valid, stop,
            top_of_rep, fill, counts, valid_out, valid_start, offs_out, offs_start, err):
    """Entries of every layer from ``num_levels`` levels.

    ``rep``/``defs`` may be empty (no repetition: every level starts a row; no
    definition: every level is a valid leaf). Lookup tables built from the layers:
    ``term[d]`` the layer a def level ``d`` closes at (0 for ``d == 0``),
    ``term_valid[d]`` 1 when that entry is valid (``d == 0``, or an empty list),
    ``stop[d]`` the lowest layer
    that gets an entry (``term[d]``, or for a null struct the next list below it),
    ``top_of_rep[r]`` the highest layer a rep level ``r`` opens an entry in.

    Counting fills ``counts[j]`` (entries per layer; zero it first). Filling writes,
    per layer, one validity byte per entry at ``valid_out[valid_start[j]:]`` and, for
    lists, ``counts[j] + 1`` offsets at ``offs_out[offs_start[j]:]`` (``counts`` is
    recomputed). On a bad level ``err[0]`` gets its index.
    """
    k = is_list.shape[0]
    has_rep = rep.shape[0] > 0
    has_def = defs.shape[0] > 0
    if (has_rep and rep.shape[0] < num_levels) or (has_def and defs.shape[0] < num_levels):
        err[0] = 0
        return BAD_LEVEL
    opened = np.zeros(k, np.uint8)
    for j in range(k):
        counts[j] = 0
    for i in range(num_levels):
        r = np.int64(rep[i]) if has_rep else max_rep
        d = np.int64(defs[i]) if has_def else 0
        err[0] = i
        if r > max_rep or d > max_def:
            return BAD_LEVEL
        t = term[d]
        s = stop[d]
        hi = top_of_rep[r]
        if t > hi or (hi < k - 1 and not opened[hi + 1]):
            return BAD_NESTING
        for j in range(hi, -1, -1):
            if j < s:
                opened[j] = 0
                continue
            c = counts[j]
            if fill:
                if j > t:
                    v = 1
                elif j == t:
                    v = term_valid[d]
                else:
                    v = 0
                valid_out[valid_start[j] + c] = v
                if is_list[j]:
                    offs_out[offs_start[j] + c] = counts[j - 1]
            counts[j] = c + 1
            opened[j] = 1 if (is_list[j] and j > t) else 0
    if fill:
        for j in range(1, k):
            if is_list[j]:
                offs_out[offs_start[j] + counts[j]] = counts[j - 1]
    return OK
