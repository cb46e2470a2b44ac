"""Run-length encoding (the ``Rle`` encoding, FORMAT_FACTS §3.3 and §8).

Two buffers: the run values (``width`` bytes each, little-endian) then the run
lengths (``length_width`` bytes each: u8 in the ``Rle{values Flat(T), run_lengths
Flat(8)}`` that pylance 14 writes; u16/u32 in the newer reference's "RLE v2"). A run
longer than the largest length is cut into full pieces plus the remainder. There is
no header: the run count is the lengths buffer size over ``length_width``. Example
(int32, u8 lengths): ``[1, 1, 1, 2, 2]`` → values ``01 00 00 00 02 00 00 00``,
lengths ``03 02``; a run of 500 sevens → values ``07 00 00 00 07 00 00 00``, lengths
``ff f5`` (255 + 245).

In a mini-block page each chunk has its own pair of value buffers (``num_buffers =
2``) and runs never cross chunks. The block form (2.2 level blocks) is one buffer,
``u64 LE byte length of the values | values | run lengths``, encoded as a single
chunk (bounds ``[0, n]``: pylance 14 does not cut block runs at chunk bounds).

Encoding: ``plan_chunks`` (chunk bounds as the reference picks them), then
``encode_count`` (runs per chunk) and ``encode_fill``; ``encode_blocks`` writes the
block form, one block per chunk (2.2 level blocks of mini-block chunks). Decoding: ``decode_chunks``
and ``decode_block`` check every chunk before writing any output, and reject what the
reference's reader rejects: values not a whole number of ``width``, run and length
counts that differ, zero-length runs, and lengths that do not add up to exactly the
chunk's value count.
"""

import numpy as np

from ._jit import kernel
from .bytes_util import read_uint, write_uint

OK = 0
BAD_WIDTH = -1         # width not 1/2/4/8, or length_width not 1/2/4
BAD_SIZE = -2          # data, bounds, counts or outputs do not match one another
BUFFER_PAST_END = -3   # a chunk's buffers (or a block's header) reach outside src
BAD_BUFFER_SIZES = -4  # values size not a multiple of width, or runs != lengths
ZERO_RUN = -5          # a run length of 0
RUNS_PAST_COUNT = -6   # run lengths add up to more than the chunk's value count
RUNS_SHORT = -7        # run lengths add up to less than the chunk's value count
TOO_LARGE = -8         # plan_chunks: not even two values fit in max_bytes

MAX_CHUNK_VALUES = 4096  # values per mini-block chunk (pylance 14 fills RLE chunks to this)
MAX_CHUNK_BYTES = 8186   # value bytes per chunk (8 KiB minus the chunk header)
RUN_BLOCK = 8            # decode: runs are written in blocks of this many values


# One empty array per value width, passed to the word kernels so that each is compiled for
# the word type of the widths actually met (``data.view(proto.dtype)`` inside the
# kernel), not for all four at once as a ``width ==`` branch in one kernel would: a
# branch numba does not take at run time is still compiled. The dispatch on the width
# is therefore in Python, in the public functions below.
_PROTO = {1: np.empty(0, np.uint8), 2: np.empty(0, np.uint16), 4: np.empty(0, np.uint32),
          8: np.empty(0, np.uint64)}


def _proto(width):
    """The word prototype of ``width`` (uint8's for a bad width, which the kernels
    reject before they use it)."""
    return _PROTO.get(width, _PROTO[1])


@kernel
def _widths_ok(width, length_width):
    return (width == 1 or width == 2 or width == 4 or width == 8) and \
        (length_width == 1 or length_width == 2 or length_width == 4)


@kernel
def _max_run(length_width):
    return (np.int64(1) << (8 * length_width)) - 1


# -- encoding -------------------------------------------------------------------------------

@kernel
def _plan_words(data, proto, max_values, max_bytes, entry, max_run, out_bounds):
    vals = data.view(proto.dtype)
    n = vals.shape[0]
    i = 0
    nc = 0
    while i < n:
        remaining = n - i
        limit = min(remaining, max_values)
        window = vals[i:i + limit]  # zero-based, so the scan has no negative-index checks
        # one pass over the window gives the encoded size of every power-of-two prefix
        # and of the whole window (a run cut by a prefix counts only its part inside);
        # sizes grow with the prefix, so the last prefix that fits is the largest
        best = 0
        last_size = np.int64(0)
        done = np.int64(0)      # bytes of the runs that ended before value k - 1
        run_len = np.int64(1)   # length of the run that holds value k - 1
        p = 2
        for k in range(1, limit + 1):
            if k == p or k == limit:
                size = done + (run_len + max_run - 1) // max_run * entry
                if k == p and size <= max_bytes:
                    best = p
                last_size = size
            if k == p:
                p *= 2
            if k < limit:
                if window[k] != window[k - 1]:
                    done += (run_len + max_run - 1) // max_run * entry
                    run_len = 1
                    # every later prefix costs at least done + entry: once that is past
                    # max_bytes none fits, nor does the window (the chunk is ``best``)
                    if done + entry > max_bytes:
                        last_size = done + entry
                        break
                else:
                    run_len += 1
        if remaining <= max_values and last_size <= max_bytes:
            cnt = remaining
        elif best >= 2:
            cnt = best
        else:
            return TOO_LARGE
        out_bounds[nc] = i
        nc += 1
        i += cnt
    out_bounds[nc] = n
    return nc


def plan_chunks(data, width, max_values, max_bytes, length_width, out_bounds):
    """Chunk bounds as the reference's mini-block RLE encoder picks them.

    From each start: if at most ``max_values`` values remain and they encode in
    ``max_bytes`` (values plus lengths), they form the last chunk; otherwise the chunk
    is the largest power-of-two prefix (at least 2, at most ``max_values``) that fits.
    ``out_bounds`` (``n + 1`` int64 entries is always enough) gets the first value of
    each chunk and then ``n``. Returns the chunk count or a status.
    """
    if not _widths_ok(width, length_width):
        return BAD_WIDTH
    if data.shape[0] % width != 0 or max_values < 2:
        return BAD_SIZE
    n = data.shape[0] // width
    if out_bounds.shape[0] < n + 1:
        return BAD_SIZE
    return _plan_words(data, _proto(width), max_values, max_bytes, width + length_width,
                       _max_run(length_width), out_bounds)


@kernel
def _bounds_ok(bounds, n):
    nb = bounds.shape[0]
    if nb < 1 or bounds[0] != 0 or bounds[nb - 1] != n:
        return False
    for c in range(nb - 1):
        if bounds[c + 1] < bounds[c]:
            return False
    return True


@kernel
def _chunk_runs(chunk, max_run):
    """Runs in ``chunk`` once runs longer than ``max_run`` are split."""
    m = chunk.shape[0]
    runs = np.int64(0)
    start = 0
    for k in range(1, m + 1):
        if k == m or chunk[k] != chunk[k - 1]:
            runs += (k - start + max_run - 1) // max_run
            start = k
    return runs


@kernel
def _check_chunks(data, width, length_width, bounds, per_chunk):
    """OK when the widths are valid, ``data`` holds whole values, ``bounds`` cut it
    into chunks and a per-chunk array of ``per_chunk`` entries covers them."""
    if not _widths_ok(width, length_width):
        return BAD_WIDTH
    if data.shape[0] % width != 0:
        return BAD_SIZE
    if not _bounds_ok(bounds, data.shape[0] // width) or per_chunk < bounds.shape[0] - 1:
        return BAD_SIZE
    return OK


@kernel
def _count_words(data, proto, bounds, max_run, out_runs):
    vals = data.view(proto.dtype)
    total = np.int64(0)
    for c in range(bounds.shape[0] - 1):
        runs = _chunk_runs(vals[bounds[c]:bounds[c + 1]], max_run)
        out_runs[c] = runs
        total += runs
    return total


def encode_count(data, width, bounds, length_width, out_runs):
    """Runs of each chunk ``[bounds[c], bounds[c + 1])`` after cutting long runs:
    ``out_runs[c]``; returns the total or a status."""
    status = _check_chunks(data, width, length_width, bounds, out_runs.shape[0])
    if status != OK:
        return status
    return _count_words(data, _proto(width), bounds, _max_run(length_width), out_runs)


@kernel
def _fill_words(data, proto, bounds, length_width, run_starts, out_values, out_lengths):
    vals = data.view(proto.dtype)
    out_vals = out_values.view(proto.dtype)
    max_run = _max_run(length_width)
    cap = out_vals.shape[0]
    for c in range(bounds.shape[0] - 1):
        chunk = vals[bounds[c]:bounds[c + 1]]
        m = chunk.shape[0]
        r = run_starts[c]
        start = 0
        for k in range(1, m + 1):
            if k == m or chunk[k] != chunk[k - 1]:
                left = k - start
                while left > 0:
                    piece = min(left, max_run)
                    if r < 0 or r >= cap:
                        return BAD_SIZE
                    out_vals[r] = chunk[start]
                    if length_width == 1:
                        out_lengths[r] = piece
                    else:
                        write_uint(out_lengths, r * length_width, piece, length_width)
                    r += 1
                    left -= piece
                start = k
    return OK


@kernel
def _fill_status(data, width, bounds, length_width, run_starts, out_values, out_lengths):
    if not _widths_ok(width, length_width):
        return BAD_WIDTH
    if data.shape[0] % width != 0 or out_values.shape[0] % width != 0:
        return BAD_SIZE
    n = data.shape[0] // width
    runs_room = out_values.shape[0] // width
    if not _bounds_ok(bounds, n) or run_starts.shape[0] < bounds.shape[0] - 1 \
            or out_lengths.shape[0] != runs_room * length_width:
        return BAD_SIZE
    return OK


def encode_fill(data, width, bounds, length_width, run_starts, out_values, out_lengths):
    """Write the runs of chunk ``c`` from run ``run_starts[c]`` on: values into
    ``out_values`` (``width`` bytes per run), lengths into ``out_lengths``
    (``length_width`` bytes per run). Size the outputs from :func:`encode_count`;
    a write past them stops with ``BAD_SIZE``."""
    status = _fill_status(data, width, bounds, length_width, run_starts, out_values,
                          out_lengths)
    if status != OK:
        return status
    return _fill_words(data, _proto(width), bounds, length_width, run_starts, out_values,
                       out_lengths)


@kernel
def _block_words(data, proto, width, bounds, length_width, block_starts, out):
    vals = data.view(proto.dtype)
    max_run = _max_run(length_width)
    for c in range(bounds.shape[0] - 1):
        chunk = vals[bounds[c]:bounds[c + 1]]
        m = chunk.shape[0]
        runs = _chunk_runs(chunk, max_run)
        base = block_starts[c]
        if base < 0 or base + 8 + runs * (width + length_width) > out.shape[0]:
            return BAD_SIZE
        write_uint(out, base, runs * width, 8)
        vp = base + 8
        lp = vp + runs * width
        start = 0
        for k in range(1, m + 1):
            if k == m or chunk[k] != chunk[k - 1]:
                left = k - start
                while left > 0:
                    piece = min(left, max_run)
                    write_uint(out, vp, chunk[start], width)
                    write_uint(out, lp, piece, length_width)
                    vp += width
                    lp += length_width
                    left -= piece
                start = k
    return OK


def encode_blocks(data, width, bounds, length_width, block_starts, out):
    """Each chunk ``[bounds[c], bounds[c + 1])`` of ``data`` in the block form ``u64
    values byte length | values | lengths`` at ``out[block_starts[c]:]``. A block
    takes ``8 + runs * (width + length_width)`` bytes, with the runs from
    :func:`encode_count`. Returns OK or a status (``BAD_SIZE`` when a block would not
    fit in ``out``)."""
    status = _check_chunks(data, width, length_width, bounds, block_starts.shape[0])
    if status != OK:
        return status
    return _block_words(data, _proto(width), width, bounds, length_width, block_starts, out)


# -- decoding -------------------------------------------------------------------------------

@kernel
def _length(lens, r, length_width):
    """Run length ``r`` from the chunk's length bytes (u8, u16 or u32, little-endian)."""
    if length_width == 1:
        return np.uint64(lens[r])
    q = r * length_width
    v = np.uint64(lens[q]) | (np.uint64(lens[q + 1]) << np.uint64(8))
    if length_width == 4:
        v |= (np.uint64(lens[q + 2]) << np.uint64(16)) | (np.uint64(lens[q + 3]) << np.uint64(24))
    return v


@kernel
def _lengths_status(lens, length_width, cnt):
    """``(status, run)`` for one chunk's run lengths (``lens``: their bytes) against
    its value count: ``(OK, -1)``, or the first zero run, the run that passes ``cnt``,
    or ``RUNS_SHORT`` with ``run`` = the run count."""
    nr = lens.shape[0] // length_width
    if length_width == 1:  # fast path: a vectorised sum and min
        total = np.int64(0)
        low = np.int64(1)
        for r in range(nr):
            x = np.int64(lens[r])
            total += x
            low = min(low, x)
        if low > 0 and total == cnt:
            return OK, -1
    total = np.int64(0)
    for r in range(nr):
        x = np.int64(_length(lens, r, length_width))
        if x == 0:
            return ZERO_RUN, r
        if x > cnt - total:
            return RUNS_PAST_COUNT, r
        total += x
    if total != cnt:
        return RUNS_SHORT, nr
    return OK, -1


@kernel
def _check_chunk(src, vs, vz, ls, lz, cnt, width, length_width):
    """Validate one chunk (values at ``src[vs:vs+vz]``, lengths at ``src[ls:ls+lz]``,
    ``cnt`` values): ``(OK, 0)`` or ``(status, byte position of the problem)``."""
    size = src.shape[0]
    if vs < 0 or vz < 0 or vs > size or vz > size - vs:
        return BUFFER_PAST_END, vs
    if ls < 0 or lz < 0 or ls > size or lz > size - ls:
        return BUFFER_PAST_END, ls
    if cnt < 0:
        return BAD_SIZE, vs
    if vz % width != 0 or lz % length_width != 0 or vz // width != lz // length_width:
        return BAD_BUFFER_SIZES, vs
    status, r = _lengths_status(src[ls:ls + lz], length_width, cnt)
    return status, ls + r * length_width if status != OK else 0


@kernel
def _expand_chunk(vals, lens, length_width, out_vals, p):
    """Write one chunk's runs at ``out_vals[p:]``; returns the position after them.

    Runs are written in blocks of ``RUN_BLOCK`` equal values (one or two vector
    stores): the last block of a run may spill past it, which the runs that follow
    overwrite, so only the end of the output needs an exact loop. Positions are
    unsigned because numba checks every signed index for a negative value, which
    blocks vectorisation (2x slower here)."""
    total = np.uint64(out_vals.shape[0])
    q = np.uint64(p)
    block = np.uint64(RUN_BLOCK)
    for r in range(vals.shape[0]):
        length = _length(lens, r, length_width)
        v = vals[r]
        end = q + length
        k = q
        if end + block <= total:
            while k < end:
                for j in range(RUN_BLOCK):
                    out_vals[k + np.uint64(j)] = v
                k += block
        else:
            while k < end:
                out_vals[k] = v
                k += np.uint64(1)
        q = end
    return np.int64(q)


@kernel
def _expand_one(src, vs, ls, lz, proto, length_width, out, p):
    """Expand the validated chunk at ``vs``/``ls`` into ``out`` (bytes) from value
    ``p`` on, through views as ``proto``'s word type."""
    nr = lz // length_width
    return _expand_chunk(src[vs:vs + nr * proto.itemsize].view(proto.dtype),
                         src[ls:ls + lz], length_width, out.view(proto.dtype), p)


@kernel
def _expand_chunks(src, vstarts, lstarts, lsizes, proto, length_width, out):
    p = np.int64(0)
    for c in range(vstarts.shape[0]):
        p = _expand_one(src, vstarts[c], lstarts[c], lsizes[c], proto, length_width, out, p)


@kernel
def _chunks_status(src, vstarts, vsizes, lstarts, lsizes, counts, width, length_width,
                   out, err):
    """The checks of :func:`decode_chunks`."""
    if not _widths_ok(width, length_width):
        return BAD_WIDTH
    nc = vstarts.shape[0]
    if vsizes.shape[0] != nc or lstarts.shape[0] != nc or lsizes.shape[0] != nc \
            or counts.shape[0] != nc or out.shape[0] % width != 0:
        return BAD_SIZE
    room = out.shape[0] // width
    need = np.int64(0)
    for c in range(nc):
        status, pos = _check_chunk(src, vstarts[c], vsizes[c], lstarts[c], lsizes[c],
                                   counts[c], width, length_width)
        if status != OK:
            err[0] = c
            err[1] = pos
            return status
        if counts[c] > room - need:
            err[0] = c
            err[1] = vstarts[c]
            return BAD_SIZE
        need += counts[c]
    if need != room:
        err[0] = nc
        err[1] = 0
        return BAD_SIZE
    return OK


def decode_chunks(src, vstarts, vsizes, lstarts, lsizes, counts, width, length_width,
                  out, err):
    """Decode mini-block RLE chunks into ``out`` (``sum(counts) * width`` bytes).

    Chunk ``c`` has its values at ``src[vstarts[c]:][:vsizes[c]]``, its lengths at
    ``src[lstarts[c]:][:lsizes[c]]`` and ``counts[c]`` values. Every chunk is checked
    before anything is written. Returns ``OK`` or a status; ``err`` gets the chunk and
    the byte position in ``src`` of the problem.
    """
    status = _chunks_status(src, vstarts, vsizes, lstarts, lsizes, counts, width,
                            length_width, out, err)
    if status == OK:
        _expand_chunks(src, vstarts, lstarts, lsizes, _proto(width), length_width, out)
    return status


@kernel
def _decode_block(src, width, proto, length_width, count, out):
    if not _widths_ok(width, length_width):
        return BAD_WIDTH
    if count < 0 or out.shape[0] % width != 0 or out.shape[0] // width != count:
        return BAD_SIZE
    size = src.shape[0]
    if size < 8:
        return BUFFER_PAST_END
    vz_u = read_uint(src, 0, 8)
    if vz_u > np.uint64(size - 8):
        return BUFFER_PAST_END
    vz = np.int64(vz_u)
    status, _ = _check_chunk(src, 8, vz, 8 + vz, size - 8 - vz, count, width, length_width)
    if status != OK:
        return status
    _expand_one(src, 8, 8 + vz, size - 8 - vz, proto, length_width, out, 0)
    return OK


def decode_block(src, width, length_width, count, out):
    """Decode the block form ``u64 values byte length | values | lengths`` of
    ``count`` values into ``out`` (``count * width`` bytes). Returns a status."""
    return _decode_block(src, width, _proto(width), length_width, count, out)


def decode_blocks(src, starts, sizes, counts, width, length_width, out, err):
    """Decode one block-form buffer per chunk (``starts``/``sizes`` into ``src``,
    ``counts`` values each) back to back into ``out``; on failure ``err[0]`` is the
    chunk. Returns a status."""
    return _decode_blocks(src, starts, sizes, counts, width, _proto(width), length_width,
                          out, err)


@kernel
def _decode_blocks(src, starts, sizes, counts, width, proto, length_width, out, err):
    total = 0
    for c in range(counts.shape[0]):
        if counts[c] < 0 or starts[c] < 0 or sizes[c] < 0 or starts[c] + sizes[c] > src.shape[0]:
            err[0] = c
            return BUFFER_PAST_END
        total += counts[c]
    if total * width != out.shape[0]:
        return BAD_SIZE
    p = 0
    for c in range(counts.shape[0]):
        n = counts[c] * width
        status = _decode_block(src[starts[c]:starts[c] + sizes[c]], width, proto,
                               length_width, counts[c], out[p:p + n])
        if status != OK:
            err[0] = c
            return status
        p += n
    return OK
