"""Per-process thread pools that survive ``fork``.

A forked child has only the thread that called ``fork``: a pool made before it keeps
its queue but has no workers, so the child's first read or write would wait forever
(multiprocessing's fork start method, PyTorch DataLoader workers, Spark's Python
workers). :class:`ThreadPool` forgets its executor, and replaces its lock (another
thread may have held it at fork time), in the child, so the child starts its own.

The same goes for any lock: a lock another thread held when the process forked stays
held forever in the child. :func:`module_lock` and :func:`fork_safe_locks` give module
globals and object attributes fresh locks in the child.
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

__all__ = ["ThreadPool", "fork_safe_locks", "module_lock"]

_POOLS: weakref.WeakSet = weakref.WeakSet()
# objects whose lock attributes are replaced in a forked child: obj -> attribute names
_LOCK_OWNERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# (module namespace, global name) of module-level locks replaced in a forked child
_MODULE_LOCKS: list[tuple[dict, str]] = []


def module_lock(namespace: dict, name: str) -> threading.Lock:
    """A new lock stored as ``namespace[name]`` (pass ``globals()``), replaced by a fresh
    one in a forked child. Code must read the global at each use (``with _LOCK:``)."""
    lock = threading.Lock()
    namespace[name] = lock
    _MODULE_LOCKS.append((namespace, name))
    return lock


def fork_safe_locks(obj, *names: str) -> None:
    """Replace ``obj``'s lock attributes ``names`` with fresh locks in a forked child
    (``obj`` is held weakly)."""
    _LOCK_OWNERS[obj] = names


class ThreadPool:
    """A lazily started :class:`ThreadPoolExecutor`, one per process.

    Parameters
    ----------
    max_workers : callable
        Returns the worker count when the executor starts (so it follows
        ``os.cpu_count()`` in the process that uses it).
    name : str
        Prefix of the worker threads' names.
    """

    def __init__(self, max_workers: Callable[[], int], name: str):
        self._max_workers = max_workers
        self._name = name
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        _POOLS.add(self)

    def get(self) -> ThreadPoolExecutor:
        """The executor of this process, started on first use."""
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self._max_workers(),
                                                    thread_name_prefix=self._name)
            return self._executor

    def _forget(self) -> None:
        # the old executor's threads do not exist here; drop it without shutting it
        # down (shutdown would wait on work nobody will do)
        self._lock = threading.Lock()
        self._executor = None


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._forget()
    for namespace, name in _MODULE_LOCKS:
        namespace[name] = threading.Lock()
    for obj, names in list(_LOCK_OWNERS.items()):
        for name in names:
            setattr(obj, name, threading.Lock())


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
