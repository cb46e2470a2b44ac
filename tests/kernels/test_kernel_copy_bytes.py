"""``bytes_util.copy_bytes`` (memcpy inside kernels) against NumPy slice assignment,
through the kernels that use it (``fullzip.unzip_variable_fill``,
``slices.concat_slices``) and a kernel of its own here; also under NUMBA_DISABLE_JIT."""

import os
import subprocess
import sys

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import fullzip, slices
from lancenb.kernels._jit import kernel
from lancenb.kernels.bytes_util import copy_bytes


@kernel
def _copy_runs(dst, dst_at, src, src_at, sizes):
    for i in range(sizes.shape[0]):
        copy_bytes(dst, dst_at[i], src, src_at[i], sizes[i])
    return 0


def _runs(draw_sizes, src_len, dst_len, seed):
    rng = np.random.default_rng(seed)
    n = len(draw_sizes)
    sizes = np.array([min(s, src_len, dst_len) for s in draw_sizes], np.int64)
    src_at = np.array([rng.integers(0, src_len - s + 1) for s in sizes], np.int64)
    dst_at = np.array([rng.integers(0, dst_len - s + 1) for s in sizes], np.int64)
    return src_at.reshape(n), dst_at.reshape(n), sizes.reshape(n)


@given(st.lists(st.integers(0, 20_000), max_size=12), st.integers(1, 30_000),
       st.integers(1, 30_000), st.integers(0, 2**32 - 1))
def test_copy_bytes_is_slice_assignment(sizes, src_len, dst_len, seed):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 256, src_len, dtype=np.uint8)
    src_at, dst_at, n = _runs(sizes, src_len, dst_len, seed)
    got = np.zeros(dst_len, np.uint8)
    want = got.copy()
    for a, b, k in zip(src_at, dst_at, n):  # the NumPy reference
        want[b:b + k] = src[a:a + k]
    _copy_runs(got, dst_at, np.frombuffer(src.tobytes(), np.uint8), src_at, n)  # read-only src
    assert np.array_equal(got, want)


def test_copy_bytes_other_layouts_fall_back_to_slicing():
    src = np.arange(40, dtype=np.uint8)[::2]  # not contiguous
    dst = np.zeros(30, np.uint8)
    _copy_runs(dst, np.array([3]), src, np.array([1]), np.array([5]))
    assert dst[3:8].tolist() == src[1:6].tolist()
    wide = np.zeros(6, np.int32)
    _copy_runs(wide, np.array([1]), np.arange(6, dtype=np.int32), np.array([2]), np.array([3]))
    assert wide.tolist() == [0, 2, 3, 4, 0, 0]


@given(st.lists(st.binary(max_size=9000), max_size=20), st.sampled_from([1, 2, 4]))
def test_full_zip_values_copied_whole(values, len_width):
    data = b"".join(len(v).to_bytes(len_width, "little") + v for v in values)
    n = len(values)
    offsets = np.empty(n + 1, np.int64)
    out = np.zeros(sum(map(len, values)), np.uint8)
    defs = np.empty(n, np.uint8)
    buf = np.frombuffer(data, np.uint8)
    assert fullzip.unzip_variable_size(buf, n, 0, len_width, 0, np.zeros(2, np.int64)) \
        == len(out)
    assert fullzip.unzip_variable_fill(buf, n, 0, len_width, 0, offsets, out, defs) == 0
    assert out.tobytes() == b"".join(values)
    assert offsets.tolist() == [0, *np.cumsum([len(v) for v in values]).tolist()]


@given(st.binary(min_size=1, max_size=20_000), st.integers(0, 2**32 - 1))
def test_concat_slices_large_runs(src, seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(0, 8))
    starts = rng.integers(0, len(src), k).astype(np.int64)
    sizes = np.array([rng.integers(0, len(src) - s + 1) for s in starts], np.int64)
    out = np.zeros(int(sizes.sum()), np.uint8)
    assert slices.concat_slices(np.frombuffer(src, np.uint8), starts, sizes, out) == 0
    assert out.tobytes() == b"".join(src[s:s + n] for s, n in zip(starts, sizes))


def test_under_disable_jit():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           __file__, "-k", "not under_disable_jit"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-1000:]
