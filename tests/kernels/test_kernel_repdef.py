"""Rep/def kernels (``shred``, ``unshred``) against pure-Python references written from
FORMAT_FACTS §2.1: random nested arrays (structs, lists, large lists, nulls and empty
lists at every level, depth up to 3) shred to the levels the reference walk gives,
unshred back to the same entries, and random (corrupt) levels are rejected exactly
when the reference rejects them.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import repdef as kr

from lancenb.encodings.blocks import validity_of
from lancenb.encodings.structural import repdef as rd

L = rd.L


# -- references ---------------------------------------------------------------------------

def _kinds(dt, path):
    """Node kinds from the root down: 'struct' (with the child's name), 'list', 'leaf'."""
    out = []
    for step in list(path) + [None]:
        if pa.types.is_struct(dt):
            f = dt.field(step)
            out.append(("struct", f.name))
            dt = f.type
        elif pa.types.is_list(dt) or pa.types.is_large_list(dt):
            out.append(("list", None))
            dt = dt.value_type
        else:
            out.append(("leaf", None))
    return out


def ref_shred(rows, dt, path, info):
    """``[(rep, def, visible, value)]`` by walking the Python values recursively."""
    kinds = _kinds(dt, path)
    k = len(kinds)
    lists = [j for j in range(k) if info.is_list[j]]
    first_list = lists[0] if lists else k
    out = []

    def walk(v, depth, rep):
        j = k - 1 - depth
        kind, name = kinds[depth]
        if v is None:
            out.append((rep, int(info.null_level[j]), j < first_list, None))
        elif kind == "leaf":
            out.append((rep, 0, True, v))
        elif kind == "struct":
            walk(v[name], depth + 1, rep)
        elif len(v) == 0:
            out.append((rep, int(info.empty_level[j]), False, None))
        else:
            for i, x in enumerate(v):
                walk(x, depth + 1, rep if i == 0 else int(info.rep_num[j]) - 1)

    for row in rows:
        walk(row, 0, info.max_rep)
    return out


def ref_unshred(rep, defs, n, info):
    """Per layer ``(validity list, offsets list)``, or None for levels that do not
    describe a nesting: a plain transcription of the rules, one level at a time."""
    k = info.num_layers
    meaning = {0: (0, True)}
    for j in range(k):
        if info.null_level[j]:
            meaning[int(info.null_level[j])] = (j, False)
        if info.empty_level[j]:
            meaning[int(info.empty_level[j])] = (j, True)
    valid = [[] for _ in range(k)]
    offs = [[] for _ in range(k)]
    open_list = [False] * k
    for i in range(n):
        r = int(rep[i]) if len(rep) else info.max_rep
        d = int(defs[i]) if len(defs) else 0
        if r > info.max_rep or d not in meaning:
            return None
        t, term_ok = meaning[d]
        if r == info.max_rep:
            hi = k - 1
        else:
            hi = [j for j in range(k) if info.is_list[j] and info.rep_num[j] == r + 1][0] - 1
            if not open_list[hi + 1]:
                return None
        if t > hi:
            return None
        lo = t
        if d and not info.is_list[t]:
            below = [j for j in range(t) if info.is_list[j]]
            lo = below[-1] if below else 0
        for j in range(k):
            if j < lo:
                open_list[j] = False if info.is_list[j] else open_list[j]
        for j in range(hi, lo - 1, -1):
            ok = True if j > t else (term_ok if j == t else False)
            valid[j].append(ok)
            if info.is_list[j]:
                offs[j].append(len(valid[j - 1]) if j > 0 else 0)
                open_list[j] = j > t
    for j in range(1, k):
        if info.is_list[j]:
            offs[j].append(len(valid[j - 1]))
    return valid, offs


# -- data ---------------------------------------------------------------------------------

def _types(depth):
    leaf = st.sampled_from([pa.int32(), pa.int16()])
    if depth == 0:
        return leaf
    inner = _types(depth - 1)
    return st.one_of(
        leaf,
        inner.map(lambda t: pa.list_(t)),
        inner.map(lambda t: pa.large_list(t)),
        st.tuples(inner, inner).map(lambda ts: pa.struct([("a", ts[0]), ("b", ts[1])])))


def _values(dt, draw, null_p):
    if draw(st.floats(0, 1)) < null_p:
        return None
    if pa.types.is_struct(dt):
        return {f.name: _values(f.type, draw, null_p) for f in dt}
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        return [_values(dt.value_type, draw, null_p)
                for _ in range(draw(st.integers(0, 3)))]
    return draw(st.integers(-100, 100))


@st.composite
def nested_arrays(draw):
    dt = draw(_types(3))
    null_p = draw(st.sampled_from([0.0, 0.2, 0.5]))
    rows = [_values(dt, draw, null_p) for _ in range(draw(st.integers(0, 12)))]
    arr = pa.array(rows, type=dt)
    if len(arr) > 2 and draw(st.booleans()):
        arr = arr.slice(1, len(arr) - 2)
    return arr


def _layer_arrays(arr, path, as_input):
    """The kernel inputs ``shred`` plans, rebuilt here from the Arrow array."""
    outer = []
    a = arr
    d = 0
    while True:
        v = validity_of(a)
        v = None if v is None else v.astype(np.uint8)
        if pa.types.is_struct(a.type):
            outer.append((0, v, None, len(a)))
            a = a.field(path[d])
        elif pa.types.is_list(a.type) or pa.types.is_large_list(a.type):
            outer.append((1, v, np.asarray(a.offsets, np.int64), len(a)))
            a = a.values
        else:
            outer.append((0, v, None, len(a)))
            break
        d += 1
    layers = outer[::-1]
    k = len(layers)
    vs, os_ = np.full(k, -1, np.int64), np.full(k, -1, np.int64)
    vparts, oparts, vp, op = [], [], 0, 0
    for j, (_, v, o, _) in enumerate(layers):
        if v is not None:
            vs[j], vp = vp, vp + len(v)
            vparts.append(v)
        if o is not None:
            os_[j], op = op, op + len(o)
            oparts.append(o)
    return (as_input(np.array([x[0] for x in layers], np.uint8)),
            as_input(np.concatenate(vparts) if vparts else np.zeros(0, np.uint8)),
            as_input(vs),
            as_input(np.concatenate(oparts) if oparts else np.zeros(0, np.int64)),
            as_input(os_), as_input(np.array([x[3] for x in layers], np.int64)))


# -- properties ---------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(arr=nested_arrays())
def test_shred_matches_reference(arr, as_input, guarded):
    rows = arr.to_pylist()
    for path in rd.leaf_paths(arr.type):
        levels, leaf = rd.shred(arr, path)
        info = levels.info
        ref = ref_shred(rows, arr.type, path, info)
        assert levels.num_levels == len(ref)
        if info.max_rep:
            assert levels.rep.tolist() == [x[0] for x in ref]
        else:
            assert levels.rep is None
        if info.max_def:
            assert levels.defs.tolist() == [x[1] for x in ref]
        else:
            assert all(x[1] == 0 for x in ref)
        vis = [x for x in ref if x[2]]
        assert len(leaf) == len(vis)
        got = leaf.to_pylist()
        assert [g for g, x in zip(got, vis) if x[1] == 0] == [x[3] for x in vis if x[1] == 0]
        # the kernel directly, read-only inputs and guarded outputs
        is_list, valid, vs, offs, os_, lengths = _layer_arrays(arr, path, as_input)
        n = levels.num_levels
        rep = guarded(n if info.max_rep else 0, np.uint16)
        defs = guarded(n if info.max_def else 0, np.uint16)
        pos = guarded(len(vis), np.int64)
        counts = np.zeros(2, np.int64)
        k = info.num_layers
        status = kr.shred(is_list, valid, vs, offs, os_, lengths, as_input(info.null_level),
                          as_input(info.empty_level), as_input(info.rep_num), info.max_rep,
                          True, rep.out, defs.out, pos.out, np.zeros(k, np.uint8),
                          np.zeros(k, np.uint8), counts)
        assert status == kr.OK and rep.intact() and defs.intact() and pos.intact()
        assert counts.tolist() == [n, len(vis)]


@settings(max_examples=150, deadline=None)
@given(arr=nested_arrays())
def test_unshred_round_trips(arr, as_input):
    chains = []
    for path in rd.leaf_paths(arr.type):
        levels, leaf = rd.shred(arr, path)
        ref = ref_unshred(levels.rep if levels.rep is not None else [],
                          levels.defs if levels.defs is not None else [],
                          levels.num_levels, levels.info)
        levels.rep = None if levels.rep is None else as_input(levels.rep)
        levels.defs = None if levels.defs is None else as_input(levels.defs)
        un = rd.unshred(levels, len(leaf), "test",
                        offsets32=rd.offsets32(rd.chain_type(arr.type, path)))
        if levels.rep is not None or levels.defs is not None:
            for j in range(levels.info.num_layers):
                count, valid, offs = un.layer(j)
                assert count == len(ref[0][j])
                if valid is not None:
                    assert valid.tolist() == ref[0][j]
                if offs is not None:
                    assert offs.tolist() == ref[1][j]
        lv = rd.leaf_validity(levels)
        v0 = un.validity(0)
        assert (v0 is None and (lv is None or lv.all())) or v0.tolist() == lv.tolist()
        if lv is not None:
            leaf = pc.if_else(pa.array(lv), leaf, pa.nulls(len(leaf), leaf.type))
        chains.append(rd.build_chain(rd.chain_type(arr.type, path), leaf, un, "test"))
    out = rd.merge(arr.type, chains)
    out.validate(full=True)
    assert out.to_pylist() == arr.to_pylist()


LAYER_SETS = [
    [L.REPDEF_NULLABLE_ITEM, L.REPDEF_NULL_AND_EMPTY_LIST],
    [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_ALL_VALID_ITEM, L.REPDEF_ALL_VALID_ITEM,
     L.REPDEF_EMPTYABLE_LIST],
    [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_NULL_AND_EMPTY_LIST],
    [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_NULLABLE_ITEM, L.REPDEF_EMPTYABLE_LIST],
    [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_EMPTYABLE_LIST, L.REPDEF_NULLABLE_ITEM,
     L.REPDEF_NULLABLE_LIST],
    [L.REPDEF_NULLABLE_ITEM, L.REPDEF_NULLABLE_ITEM],
    [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_ALL_VALID_LIST, L.REPDEF_NULL_AND_EMPTY_LIST],
]


@settings(max_examples=300, deadline=None)
@given(which=st.integers(0, len(LAYER_SETS) - 1), data=st.data(),
       offs_dtype=st.sampled_from([np.int32, np.int64]))
def test_unshred_random_levels(which, data, offs_dtype, as_input, guarded):
    """Arbitrary (often corrupt) levels: the kernel accepts exactly what the reference
    accepts, agrees with it, and never writes outside its outputs."""
    info = rd.LayerInfo.from_layers(LAYER_SETS[which])
    n = data.draw(st.integers(0, 30))
    rep = np.array(data.draw(st.lists(st.integers(0, info.max_rep + 1), min_size=n,
                                      max_size=n)), np.uint16) if info.max_rep else \
        np.zeros(0, np.uint16)
    defs = np.array(data.draw(st.lists(st.integers(0, info.max_def + 1), min_size=n,
                                       max_size=n)), np.uint16)
    ref = ref_unshred(rep, defs, n, info)
    term, term_valid, stop, top = info.tables()
    k = info.num_layers
    nlists = int(info.is_list.sum())
    counts = np.zeros(k, np.int64)
    nulls = np.zeros(k, np.int64)
    err = np.zeros(1, np.int64)
    valid = guarded((k, n), np.uint8)
    offs = guarded((nlists, n + 1), offs_dtype)
    skip = info.skip if data.draw(st.booleans()) else np.zeros(k, np.uint8)
    status = kr.unshred(as_input(rep), as_input(defs), n, info.max_rep, info.max_def,
                        as_input(info.is_list), as_input(info.list_row), as_input(term),
                        as_input(term_valid), as_input(stop), as_input(top), as_input(skip),
                        counts, nulls, valid.out, offs.out, err)
    assert valid.intact() and offs.intact()
    if ref is None:
        assert status in (kr.BAD_LEVEL, kr.BAD_NESTING)
        return
    assert status == kr.OK
    assert counts.tolist() == [len(v) for v in ref[0]]
    for j in range(k):
        if not skip[j]:
            assert nulls[j] == ref[0][j].count(False)
            assert valid.out[j, :counts[j]].tolist() == [int(x) for x in ref[0][j]]
        if info.is_list[j]:
            assert offs.out[info.list_row[j], :counts[j] + 1].tolist() == ref[1][j]
    levels = rd.Levels(rep if info.max_rep else None, defs, info, n, 0)
    un = rd.unshred(levels, int(counts[0]), "test")
    for j in range(k):
        _count, v, o = un.layer(j)
        if v is not None:
            assert v.tolist() == ref[0][j]
        if o is not None:
            assert o.tolist() == ref[1][j]


def test_unshred_rejects_small_outputs():
    info = rd.LayerInfo.from_layers(LAYER_SETS[0])
    term, term_valid, stop, top = info.tables()
    rep = np.array([1, 0, 1], np.uint16)
    defs = np.zeros(3, np.uint16)
    z = np.zeros(2, np.int64)
    for valid, offs in [(np.zeros((2, 2), np.uint8), np.zeros((1, 4), np.int64)),
                        (np.zeros((2, 3), np.uint8), np.zeros((1, 3), np.int64)),
                        (np.zeros((1, 3), np.uint8), np.zeros((1, 4), np.int64))]:
        assert kr.unshred(rep, defs, 3, info.max_rep, info.max_def, info.is_list,
                          info.list_row, term, term_valid, stop, top, np.zeros(2, np.uint8),
                          z.copy(), z.copy(),
                          valid, offs, np.zeros(1, np.int64)) == kr.BAD_ARGS


def test_shred_rejects_offsets_past_values():
    k = 2
    status = kr.shred(np.array([0, 1], np.uint8), np.zeros(0, np.uint8), np.full(k, -1),
                      np.array([0, 5], np.int64), np.array([-1, 0]), np.array([3, 1]),
                      np.zeros(k, np.int64), np.zeros(k, np.int64), np.array([0, 1]), 1,
                      False, np.zeros(0, np.uint16), np.zeros(0, np.uint16),
                      np.zeros(0, np.int64), np.zeros(k, np.uint8), np.zeros(k, np.uint8),
                      np.zeros(2, np.int64))
    assert status == kr.BAD_OFFSETS


@pytest.mark.parametrize("rows,rep,defs", [
    ([[1, 2], [], None], [1, 0, 1, 1], [0, 0, 2, 1]),
])
def test_known_levels(rows, rep, defs):
    levels, leaf = rd.shred(pa.array(rows, pa.list_(pa.int32())), (0,))
    assert levels.layers == [L.REPDEF_ALL_VALID_ITEM, L.REPDEF_NULL_AND_EMPTY_LIST]
    assert levels.rep.tolist() == rep and levels.defs.tolist() == defs
    assert leaf.to_pylist() == [1, 2]


def test_null_struct_levels():
    """FORMAT_FACTS §2.1: a null struct wrapping a nullable leaf: leaf null 1, struct 2;
    the leaf is labelled nullable even without nulls of its own."""
    arr = pa.array([{"x": 1}, None, {"x": None}], pa.struct([("x", pa.int32())]))
    levels, _ = rd.shred(arr, (0,))
    assert levels.layers == [L.REPDEF_NULLABLE_ITEM, L.REPDEF_NULLABLE_ITEM]
    assert levels.defs.tolist() == [0, 2, 1]
    arr = pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))
    assert rd.shred(arr, (0,))[0].defs.tolist() == [0, 2]


# -- locate_rows ------------------------------------------------------------------------

def ref_locate_rows(rep, defs, max_rep, mvd, need, lstart, nitems, left, row_chunk,
                    row_skip, row_end):
    """``[(ls, le, vs, ve)]`` or a status, from the definitions in the kernel's docstring."""
    total = lstart[-1]
    vis = [len(defs) == 0 or defs[p] <= mvd for p in range(total)]
    vstart = [0]
    for c in range(len(need)):
        if sum(vis[lstart[c]:lstart[c + 1]]) != nitems[c]:
            return kr.BAD_VISIBLE
        vstart.append(vstart[-1] + nitems[c])
    out = []
    for c, skip, ec in zip(row_chunk, row_skip, row_end, strict=True):
        lc = c
        while lc + 1 < len(need) and need[lc + 1] == need[lc] + 1:
            lc += 1
        starts = [p for p in range(lstart[c], lstart[c + 1]) if rep[p] == max_rep]
        if skip >= len(starts):
            return kr.BAD_ROW
        p = starts[skip]
        q = p + 1
        while q < lstart[lc + 1] and rep[q] != max_rep:
            q += 1
        if need[lc] < ec or (q == lstart[lc + 1] and need[lc] != len(left) - 1
                             and left[need[lc]] != 0):
            return kr.BAD_ROW
        v = vstart[c] + sum(vis[lstart[c]:p])
        out.append((p, q, v, v + sum(vis[p:q])))
    return out


@st.composite
def located_rows(draw):
    max_rep = draw(st.integers(1, 2))
    n = draw(st.integers(0, 40))
    rep = draw(st.lists(st.integers(0, max_rep), min_size=n, max_size=n))
    if n and draw(st.booleans()):
        rep[0] = max_rep
    has_def = draw(st.booleans())
    defs = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)) if has_def else []
    mvd = draw(st.integers(0, 2))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    lstart = [0] + cuts + [n]
    nch = len(lstart) - 1
    vis = [d <= mvd for d in defs] if has_def else [True] * n
    nitems = [sum(vis[lstart[c]:lstart[c + 1]]) for c in range(nch)]
    if nch and draw(st.integers(0, 9)) == 0:
        nitems[draw(st.integers(0, nch - 1))] += 1
    # decoded chunk numbers with gaps between runs
    need, j = [], draw(st.integers(0, 2))
    for _ in range(nch):
        need.append(j)
        j += 1 + draw(st.sampled_from([0, 0, 1, 3]))
    left = draw(st.lists(st.integers(0, 2), min_size=j + 1, max_size=j + 1))
    k = draw(st.integers(0, 6)) if nch else 0
    rows = sorted((draw(st.integers(0, nch - 1)), draw(st.integers(0, 3))) for _ in range(k))
    row_end = [need[c] + draw(st.integers(0, 2)) for c, _ in rows]
    return (np.array(rep, np.uint16), np.array(defs, np.uint16), max_rep, mvd,
            np.array(need, np.int64), np.array(lstart, np.int64),
            np.array(nitems, np.int64), np.array(left, np.int64),
            np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
            np.array(row_end, np.int64))


@settings(max_examples=300, deadline=None)
@given(case=located_rows())
def test_locate_rows_matches_reference(case, as_input, guarded):
    want = ref_locate_rows(*case)
    nrows = len(case[8])
    out = guarded((4, nrows), np.int64)
    err = np.zeros(1, np.int64)
    args = [as_input(x) if isinstance(x, np.ndarray) else x for x in case]
    got = kr.locate_rows(*args, out.out, err)
    assert out.intact()
    if isinstance(want, int):
        assert got == want
    else:
        assert got == kr.OK
        assert [tuple(r) for r in out.out.T.tolist()] == want


def test_locate_rows_rejects_bad_tables():
    rep = np.array([1, 0, 1], np.uint16)
    e = np.zeros(0, np.uint16)
    out = np.zeros((4, 1), np.int64)
    err = np.zeros(1, np.int64)
    z = np.zeros(1, np.int64)
    # levels past the decoded ones, a chunk number past the page, a row's chunk out of range
    for lstart, need, chunk in [([0, 4], [0], 0), ([0, 3], [5], 0), ([0, 3], [0], 1)]:
        assert kr.locate_rows(rep, e, 1, 0, np.array(need), np.array(lstart),
                              np.array([lstart[-1]]), np.zeros(2, np.int64), np.array([chunk]),
                              z, z, out, err) == kr.BAD_ARGS


@pytest.mark.parametrize("layers", [LAYER_SETS[5], LAYER_SETS[0]])
def test_unshred_rejects_levels_above_max(layers):
    from lancenb.errors import CorruptFileError

    info = rd.LayerInfo.from_layers(layers)
    n = 3
    rep = np.full(n, info.max_rep, np.uint16) if info.max_rep else None
    defs = np.array([0, info.max_def + 1, 0], np.uint16)
    with pytest.raises(CorruptFileError, match="level 1"):
        rd.unshred(rd.Levels(rep, defs, info, n, 0), 2, "test")


# -- shred_list: the list<leaf> short path against the general kernel ----------------------

@st.composite
def list_arrays(draw):
    """list<int32> / large_list<int32> arrays, lists and leaves null or not, maybe
    sliced (drawn from a seeded generator: cheap to draw, still shrinks by seed)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(rng.integers(0, 40))
    list_null, leaf_null = rng.choice([0.0, 0.3], 2)
    rows = [None if rng.random() < list_null else
            [None if rng.random() < leaf_null else i for i in range(rng.integers(0, 5))]
            for _ in range(n)]
    arr = pa.array(rows, type=(pa.list_ if rng.random() < .5 else pa.large_list)(pa.int32()))
    if len(arr) > 2 and rng.random() < .5:
        arr = arr.slice(1, len(arr) - 2)
    return arr


@settings(max_examples=60, deadline=None)
@given(arr=list_arrays())
def test_shred_list_matches_general_kernel(arr, as_input, guarded):
    is_list, valid, vs, offs, os_, lengths = _layer_arrays(arr, (0,), as_input)
    e16, e64 = np.zeros(0, np.uint16), np.zeros(0, np.int64)
    has_null, has_empty = np.zeros(2, np.uint8), np.zeros(2, np.uint8)
    c2 = np.zeros(2, np.int64)
    z = np.zeros(2, np.int64)
    rep_num = np.array([0, 1], np.int64)
    assert kr.shred(is_list, valid, vs, offs, os_, lengths, z, z, rep_num, 1, False, e16,
                    e16, e64, has_null, has_empty, c2) == kr.OK
    v_list = validity_of(arr)
    v_leaf = validity_of(arr.values)
    lv = as_input(np.zeros(0, np.uint8) if v_list is None else v_list.astype(np.uint8))
    fv = as_input(np.zeros(0, np.uint8) if v_leaf is None else v_leaf.astype(np.uint8))
    loffs = as_input(arr.offsets.to_numpy())  # int32 or int64, as stored
    flags, c4 = np.zeros(3, np.uint8), np.zeros(4, np.int64)
    assert kr.shred_list(lv, loffs, fv, len(arr.values), 0, 0, 0, False, e16, e16, e64,
                         flags, c4) == kr.OK
    assert c4[:2].tolist() == c2.tolist()
    assert flags.tolist() == [has_null[1], has_empty[1], has_null[0]]
    n, nvis = int(c2[0]), int(c2[1])
    null_level, empty_level = np.array([1, 2], np.int64), np.array([0, 3], np.int64)
    want = [np.zeros(n, np.uint16), np.zeros(n, np.uint16), np.zeros(nvis, np.int64)]
    kr.shred(is_list, valid, vs, offs, os_, lengths, null_level, empty_level, rep_num, 1,
             True, *want, has_null, has_empty, c2)
    rep, defs, pos = guarded(n, np.uint16), guarded(n, np.uint16), guarded(nvis, np.int64)
    assert kr.shred_list(lv, loffs, fv, len(arr.values), 2, 3, 1, True, rep.out, defs.out,
                         pos.out, flags, c4) == kr.OK
    assert rep.intact() and defs.intact() and pos.intact()
    assert rep.out.tolist() == want[0].tolist() and defs.out.tolist() == want[1].tolist()
    assert pos.out.tolist() == want[2].tolist()
    consecutive = nvis == 0 or bool(np.all(np.diff(want[2]) == 1))
    assert c4[2] == consecutive and (nvis == 0 or c4[3] == want[2][0])


def test_shred_list_rejects_bad_offsets():
    e8, e16, e64 = np.zeros(0, np.uint8), np.zeros(0, np.uint16), np.zeros(0, np.int64)
    for offs, leaf_len in (([0, 5], 3), ([2, 1], 3), ([-1, 0], 3)):
        assert kr.shred_list(e8, np.array(offs, np.int32), e8, leaf_len, 0, 0, 0, False, e16,
                             e16, e64, np.zeros(3, np.uint8),
                             np.zeros(4, np.int64)) == kr.BAD_OFFSETS
