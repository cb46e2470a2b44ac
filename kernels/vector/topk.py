"""Top-k selection: the ``k`` smallest distances, as pylance orders search results.

Order: by distance, then by a tie key (the position in the input for :func:`topk`, a
caller-given ``uint64`` key, typically the row id, for :func:`topk_by_key`, then the
position). NaN distances are never selected (pylance drops rows whose distance is
null or NaN). Example: ``dist = [3, 1, 2, 1]``, ``k = 3`` gives positions ``[1, 3, 2]``.

Kernels (stable signatures):

* ``topk(dist, k, out) -> int``: positions of the ``min(k, non-NaN count)`` smallest
  of ``dist`` (1-D float32/float64) into ``out`` (``int64``, at least ``k`` long), best
  first; returns how many were written, or ``BAD_SIZE`` when ``k < 0`` or ``out`` is
  shorter than ``k``.
* ``topk_by_key(dist, keys, k, out) -> int``: the same with ties broken by ``keys``
  (``uint64``, as long as ``dist``), then position. Merging partial top-k lists is
  this over their concatenation (:func:`merge_topk`).
* ``merge_topk(dists, keys, k, out_dist, out_keys) -> int``: the best ``k`` of
  concatenated (distance, key) candidates, written as values (not positions).

A bounded max-heap of ``k`` entries: ``O(n log k)``, and a candidate worse than the
heap's top costs one comparison, so ``k << n`` is close to one pass over ``dist``.
"""

import numpy as np

from .._jit import kernel

BAD_SIZE = -1  # k < 0, an output shorter than k, or keys not as long as dist


@kernel(inline=True)
def _worse(dist, keys, a, b):
    """Whether candidate position ``a`` sorts after ``b`` (neither NaN)."""
    if dist[a] != dist[b]:
        return dist[a] > dist[b]
    if keys[a] != keys[b]:
        return keys[a] > keys[b]
    return a > b


@kernel
def _sift_down(heap, size, dist, keys, i):
    """Restore the max-heap below ``heap[i]`` (the worst candidate at the root)."""
    while True:
        left = 2 * i + 1
        if left >= size:
            return
        big = left
        right = left + 1
        if right < size and _worse(dist, keys, heap[right], heap[left]):
            big = right
        if not _worse(dist, keys, heap[big], heap[i]):
            return
        heap[i], heap[big] = heap[big], heap[i]
        i = big


@kernel
def _select(dist, keys, k, out):
    n = dist.shape[0]
    if k == 0:
        return 0
    heap = np.empty(k, dtype=np.int64)
    size = 0
    for p in range(n):
        v = dist[p]
        if v != v:
            continue
        if size < k:
            # sift up
            c = size
            heap[c] = p
            size += 1
            while c > 0:
                parent = (c - 1) // 2
                if _worse(dist, keys, heap[c], heap[parent]):
                    heap[c], heap[parent] = heap[parent], heap[c]
                    c = parent
                else:
                    break
        elif _worse(dist, keys, heap[0], p):
            heap[0] = p
            _sift_down(heap, size, dist, keys, 0)
    # pop the worst to the back: the heap's slots end up best first
    count = size
    while size > 1:
        size -= 1
        heap[0], heap[size] = heap[size], heap[0]
        _sift_down(heap, size, dist, keys, 0)
    for i in range(count):
        out[i] = heap[i]
    return count


@kernel
def topk(dist, k, out):
    """Positions of the ``k`` smallest non-NaN ``dist`` (ties by position) into ``out``."""
    if k < 0 or out.shape[0] < k:
        return BAD_SIZE
    keys = np.zeros(1, dtype=np.uint64)
    return _select(dist, np.broadcast_to(keys, dist.shape), k, out)


@kernel
def topk_by_key(dist, keys, k, out):
    """Positions of the ``k`` smallest non-NaN ``dist`` (ties by ``keys``, then position)."""
    if k < 0 or out.shape[0] < k or keys.shape[0] != dist.shape[0]:
        return BAD_SIZE
    return _select(dist, keys, k, out)


@kernel
def merge_topk(dists, keys, k, out_dist, out_keys):
    """The best ``k`` (distance, key) pairs of the candidates, best first."""
    if k < 0 or out_dist.shape[0] < k or out_keys.shape[0] < k or \
            keys.shape[0] != dists.shape[0]:
        return BAD_SIZE
    pos = np.empty(k, dtype=np.int64)
    count = _select(dists, keys, k, pos)
    for i in range(count):
        out_dist[i] = dists[pos[i]]
        out_keys[i] = keys[pos[i]]
    return count
