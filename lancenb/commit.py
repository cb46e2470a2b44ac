"""pylance's ``lance.commit``: the commit-lock type and the conflict error.

A ``commit_lock`` (``write_dataset``, ``dataset``, ``LanceDataset.commit``) is a
callable taking the version about to be committed and returning a context manager;
the lock is held while that version's manifest is written. lancenb then uses it
instead of the store's conditional write (local disks keep their atomic link under
it). An error the lock raises propagates as a
:class:`~lancenb.errors.CommitLockError` naming it: taking the lock failed and
nothing was committed, or releasing it failed after the version was written, which
stays committed.

Examples
--------
>>> import contextlib, threading
>>> _mutex = threading.Lock()
>>> @contextlib.contextmanager
... def commit_lock(version: int):
...     with _mutex:
...         yield
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from lancenb.errors import CommitConflictError

__all__ = ["CommitLock", "CommitConflictError"]

CommitLock = Callable[[int], AbstractContextManager[None]]
