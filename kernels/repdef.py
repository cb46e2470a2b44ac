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

Shredding is "count, allocate, fill": call once with ``fill=False`` to get the sizes,
then again with outputs of those sizes. Unshredding needs no count pass: a level adds at most
one entry to each layer, so its outputs are sized by the number of levels.
"""

import numpy as np

from ._jit import kernel

OK = 0
BAD_OFFSETS = -1     # shred: an offset points outside the layer below
BAD_LEVEL = -2       # unshred: a rep or def level above the maximum
BAD_NESTING = -3     # unshred: a level continues a list that is not open (or the first
                     # level does not start a row)
BAD_ARGS = -4        # unshred, locate_rows: outputs too small or tables out of range
BAD_VISIBLE = -5     # locate_rows: a chunk's visible levels do not match its values
BAD_ROW = -6         # locate_rows: a row is not where the chunk table places it

_BLOCK = 64          # locate_rows counts row starts this many levels at a time

__all__ = ["shred", "shred_list", "unshred", "OK", "BAD_OFFSETS", "BAD_LEVEL", "BAD_NESTING",
           "BAD_ARGS", "locate_rows", "BAD_VISIBLE", "BAD_ROW"]


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
def shred_list(list_valid, offs, leaf_valid, leaf_len, null_list, empty_list, null_leaf,
               fill, rep_out, def_out, leaf_out, flags, counts):
    """:func:`shred` for the one chain ``list<leaf>`` (two layers), in one flat loop.

    ``list_valid`` (u8 per row, empty: all valid), ``offs`` (int32 or int64, rows + 1
    entries into the ``leaf_len`` leaf entries), ``leaf_valid`` (u8 per leaf entry,
    empty: all valid). The levels and statuses equal :func:`shred`'s for layers
    ``[leaf, list]`` with ``null_level = [null_leaf, null_list]``,
    ``empty_level = [0, empty_list]``, ``rep_num = [0, 1]``, ``max_rep = 1``.

    Counting (``fill`` false) sets ``flags = [list has a null, list has an empty,
    a visible leaf is null]``. ``counts`` gets ``[levels, visible levels, 1 when the
    visible leaf positions are consecutive, the first of them]``. Filling writes
    ``rep_out``/``def_out`` (if non-empty) and ``leaf_out`` (if non-empty: the leaf
    position of each visible level; a caller can skip it when they are consecutive).
    """
    rows = offs.shape[0] - 1
    if rows < 0 or offs[0] < 0 or offs[rows] > leaf_len:
        return BAD_OFFSETS
    for r in range(rows):
        if offs[r + 1] < offs[r]:
            return BAD_OFFSETS
    has_lv = list_valid.shape[0] > 0
    has_leaf = leaf_valid.shape[0] > 0
    write_rep = fill and rep_out.shape[0] > 0
    write_def = fill and def_out.shape[0] > 0
    write_pos = fill and leaf_out.shape[0] > 0
    n = 0
    nvis = 0
    consecutive = 1
    first = 0
    nxt = 0
    for r in range(rows):
        a = np.int64(offs[r])
        b = np.int64(offs[r + 1])
        is_null = has_lv and list_valid[r] == 0
        if is_null or a == b:  # a null or an empty list: one level, no leaf
            if is_null:
                flags[0] = 1
            else:
                flags[1] = 1
            if write_rep:
                rep_out[n] = 1
            if write_def:
                def_out[n] = null_list if is_null else empty_list
            n += 1
            continue
        if nvis == 0:
            first = a
        elif a != nxt:
            consecutive = 0
        nxt = b
        if write_rep:
            rep_out[n] = 1
            for i in range(n + 1, n + b - a):
                rep_out[i] = 0
        if has_leaf:
            for p in range(a, b):
                if leaf_valid[p] == 0:
                    flags[2] = 1
                    if write_def:
                        def_out[n + p - a] = null_leaf
                elif write_def:
                    def_out[n + p - a] = 0
        elif write_def:
            for i in range(n, n + b - a):
                def_out[i] = 0
        if write_pos:
            for p in range(a, b):
                leaf_out[nvis + p - a] = p
        n += b - a
        nvis += b - a
    counts[0] = n
    counts[1] = nvis
    counts[2] = consecutive
    counts[3] = first
    return OK


@kernel
def unshred(rep, defs, num_levels, max_rep, max_def, is_list, list_row, term, term_valid,
            stop, top_of_rep, skip, counts, nulls, valid_out, offs_out, err):
    """Entries of every layer from ``num_levels`` levels (one pass over them per layer).

    ``rep``/``defs`` may be empty (no repetition: every level starts a row; no
    definition: every level is a valid leaf). Lookup tables built from the layers:
    ``term[d]`` the layer a def level ``d`` closes at (0 for ``d == 0``),
    ``term_valid[d]`` 1 when that entry is valid (``d == 0``, or an empty list),
    ``stop[d]`` the lowest layer that gets an entry (``term[d]``, or for a null struct
    the next list below it), ``top_of_rep[r]`` the highest layer a rep level ``r``
    opens an entry in.

    A level adds at most one entry per layer, so the outputs are sized by
    ``num_levels``: ``valid_out`` is ``(k, >= num_levels)`` (one validity byte per
    entry, row ``j`` for layer ``j``) and ``offs_out`` ``(lists, >= num_levels + 1)``
    (int32 or int64; list layer ``j`` writes its ``counts[j] + 1`` offsets into row
    ``list_row[j]``). ``counts[j]`` gets layer ``j``'s entries and ``nulls[j]`` its
    invalid ones. On a bad level ``err[0]`` gets its index.

    ``skip[j]`` (not for the outermost layer) skips layer ``j``'s pass where the caller
    needs no validity for it and its count follows from the layer above: the leaf when
    only ``def == 0`` reaches it, or a struct layer without nulls (a struct layer has
    as many entries as the layer below it). ``valid_out[j]`` is then not written and
    ``nulls[j]`` is 0.
    """
    k = is_list.shape[0]
    has_rep = rep.shape[0] > 0
    has_def = defs.shape[0] > 0
    if (has_rep and rep.shape[0] < num_levels) or (has_def and defs.shape[0] < num_levels):
        err[0] = 0
        return BAD_LEVEL
    if num_levels < 0 or valid_out.shape[0] < k or valid_out.shape[1] < num_levels \
            or counts.shape[0] < k or nulls.shape[0] < k or term.shape[0] <= max_def \
            or term_valid.shape[0] <= max_def or stop.shape[0] <= max_def \
            or top_of_rep.shape[0] <= max_rep or list_row.shape[0] < k:
        return BAD_ARGS
    for j in range(k):
        if is_list[j] and (j == 0 or list_row[j] < 0 or list_row[j] >= offs_out.shape[0]
                           or offs_out.shape[1] < num_levels + 1):
            return BAD_ARGS
    for d in range(max_def + 1):
        if term[d] < 0 or term[d] >= k or stop[d] < 0 or stop[d] > term[d]:
            return BAD_ARGS
    for r in range(max_rep + 1):
        if top_of_rep[r] < 0 or top_of_rep[r] >= k:
            return BAD_ARGS
    if skip.shape[0] < k or (k and skip[k - 1]):
        return BAD_ARGS
    for j in range(1, k):
        if skip[j] and is_list[j]:
            return BAD_ARGS
    # levels in range first, so the passes below need no early exits
    rep_all = rep if has_rep else np.full(num_levels, max_rep, np.uint16)
    defs_all = defs if has_def else np.zeros(num_levels, np.uint16)
    top_r = 0
    top_d = 0
    for i in range(num_levels):
        top_r = max(top_r, np.int64(rep_all[i]))
        top_d = max(top_d, np.int64(defs_all[i]))
    if top_r > max_rep or top_d > max_def:
        for i in range(num_levels):
            if rep_all[i] > max_rep or defs_all[i] > max_def:
                err[0] = i
                return BAD_LEVEL
    # one pass per layer, outermost first
    res = np.zeros(3, np.int64)
    below = 0
    ran_above = False
    for j in range(k - 1, -1, -1):
        if skip[j]:
            counts[j] = below if ran_above else counts[j + 1]
            nulls[j] = 0
            ran_above = False
            continue
        ran_above = True
        lst = is_list[j] != 0
        row = list_row[j]
        if _unshred_layer(rep_all, defs_all, num_levels, j, lst, row, term, term_valid, stop,
                          top_of_rep, valid_out, offs_out, res):
            err[0] = _first_bad(rep_all, defs_all, num_levels, j, lst, term, stop,
                                top_of_rep)
            return BAD_NESTING
        counts[j] = res[0]
        below = res[1]
        nulls[j] = res[2]
        if lst:
            offs_out[row, res[0]] = below
    return OK


@kernel
def _unshred_layer(rep, defs, n, j, lst, row, term, term_valid, stop, top_of_rep,
                   valid_out, offs_out, res):
    """Layer ``j``'s pass of :func:`unshred`, branch-free: every level writes the slot
    at the layer's count, which moves on only when the level makes an entry. ``res``
    gets ``(entries, entries of layer j - 1, invalid entries)``; returns whether some
    level is misplaced."""
    c = 0
    below = 0
    nn = 0
    is_open = 0
    bad = 0
    for i in range(n):
        d = defs[i]
        t = term[d]
        s = stop[d]
        hi = top_of_rep[rep[i]]
        create = np.int64(j <= hi) & np.int64(j >= s)
        v = np.int64(j > t) | (np.int64(j == t) & np.int64(term_valid[d]))
        valid_out[j, c] = v
        nn += create & (1 - v)
        bad |= np.int64(t > hi)
        if lst:
            # continuing this list needs it open; a valid non-empty entry opens it, a
            # level that stops above closes it
            bad |= np.int64(hi == j - 1) & np.int64(is_open == 0)
            offs_out[row, c] = below
            is_open = (create & np.int64(j > t)) | ((1 - create) & is_open
                                                     & np.int64(j >= s))
        below += np.int64(j - 1 <= hi) & np.int64(j - 1 >= s)
        c += create
    res[0] = c
    res[1] = below
    res[2] = nn
    return bad != 0


@kernel
def _first_bad(rep, defs, n, j, lst, term, stop, top_of_rep):
    """The first level :func:`_unshred_layer` finds misplaced (the slow path)."""
    is_open = False
    for i in range(n):
        d = defs[i]
        t = term[d]
        s = stop[d]
        hi = top_of_rep[rep[i]]
        if t > hi or (lst and hi == j - 1 and not is_open):
            return i
        if lst:
            if s <= j <= hi:
                is_open = j > t
            elif j < s:
                is_open = False
    return n


@kernel
def locate_rows(rep, defs, max_rep, max_visible_def, need, lstart, nitems, left, row_chunk,
                row_skip, row_end_chunk, out, err):
    """Level and value-slot ranges of whole rows among decoded chunks' levels.

    ``need`` (sorted) are the page's chunks that were decoded, their levels back to
    back: ``need[c]`` holds levels ``[lstart[c], lstart[c + 1])`` and ``nitems[c]``
    values, which must equal its visible levels (``def <= max_visible_def``; all of
    them when ``defs`` is empty). Consecutive chunk numbers form a *run*; no row
    continues past the end of its run. ``left[j]`` is page chunk ``j``'s repetition
    index leftover (0: it ends at a row boundary).

    Row ``i`` is the ``row_skip[i]``-th row start (``rep == max_rep``, counted from 0)
    in decoded chunk ``row_chunk[i]``; it ends at the next row start or where its run
    ends, and must end by page chunk ``row_end_chunk[i]`` (a row that ends with its run
    needs the run's last chunk to end at a row boundary). ``out[i]`` gets ``(level
    start, level end, value start, value end)``, rows in any order: one pass over the
    levels notes every row start, then each row is a lookup. On an error ``err[0]``
    gets the decoded chunk (BAD_VISIBLE) or the row (BAD_ROW).
    """
    nch = need.shape[0]
    nleft = left.shape[0]
    has_def = defs.shape[0] > 0
    nrows = row_chunk.shape[0]
    if lstart.shape[0] != nch + 1 or nitems.shape[0] != nch or row_skip.shape[0] != nrows \
            or row_end_chunk.shape[0] != nrows or out.shape[0] < 4 or out.shape[1] < nrows:
        return BAD_ARGS
    total = lstart[nch]
    if lstart[0] != 0 or total > rep.shape[0] or (has_def and defs.shape[0] < total):
        return BAD_ARGS
    vstart = np.empty(nch + 1, np.int64)
    vstart[0] = 0
    for c in range(nch):
        if lstart[c + 1] < lstart[c] or need[c] < 0 or need[c] >= nleft \
                or (c and need[c] <= need[c - 1]):
            return BAD_ARGS
        vis = lstart[c + 1] - lstart[c]
        if has_def:
            vis = 0
            for p in range(lstart[c], lstart[c + 1]):
                vis += np.int64(defs[p] <= max_visible_def)
        if nitems[c] != vis:
            err[0] = c
            return BAD_VISIBLE
        vstart[c + 1] = vstart[c] + vis
    # the last decoded chunk of each chunk's run
    last = np.empty(nch, np.int64)
    for c in range(nch - 1, -1, -1):
        last[c] = c if c == nch - 1 or need[c + 1] != need[c] + 1 else last[c + 1]
    # a cursor: ``seen`` row starts and ``v`` value slots lie before level ``p`` of chunk
    # ``cur``; it moves forward only, skipping whole blocks of levels where it can
    cur = -1
    p = 0
    seen = 0
    v = 0
    for i in range(nrows):
        c = row_chunk[i]
        skip = row_skip[i]
        if c < 0 or c >= nch or skip < 0:
            return BAD_ARGS
        if c != cur or skip < seen:
            cur = c
            p = lstart[c]
            seen = 0
            v = vstart[c]
        b = lstart[c + 1]
        while skip - seen >= _BLOCK // 8 and p + _BLOCK <= b:
            cnt = 0
            for j in range(p, p + _BLOCK):
                cnt += np.int64(rep[j] == max_rep)
            if seen + cnt > skip:
                break
            vis = _BLOCK
            if has_def:
                vis = 0
                for j in range(p, p + _BLOCK):
                    vis += np.int64(defs[j] <= max_visible_def)
            seen += cnt
            v += vis
            p += _BLOCK
        while True:
            if p >= b:
                err[0] = i
                return BAD_ROW
            if rep[p] == max_rep:
                if seen == skip:
                    break
                seen += 1
            if not has_def or defs[p] <= max_visible_def:
                v += 1
            p += 1
        q = p
        w = v
        lc = last[c]
        end = lstart[lc + 1]
        while True:
            if not has_def or defs[q] <= max_visible_def:
                w += 1
            q += 1
            if q >= end or rep[q] == max_rep:
                break
        if need[lc] < row_end_chunk[i] or (q == end and need[lc] != nleft - 1
                                            and left[need[lc]] != 0):
            err[0] = i
            return BAD_ROW
        out[0, i] = p
        out[1, i] = q
        out[2, i] = v
        out[3, i] = w
        if q < b:
            # the next row starts where this one ends: the cursor moves there
            p = q
            v = w
            seen = skip + 1
        else:
            cur = -1
    return OK
