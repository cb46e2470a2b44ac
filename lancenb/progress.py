"""Progress: pylance's ``lance.progress`` (callbacks of fragment writes) and the bars of
long command-line work (``lancenb convert``, ``lancenb compact``).

:class:`FragmentWriteProgress` is what ``progress=`` of ``LanceFragment.create``,
``write_fragments`` and ``write_dataset`` takes: ``begin(fragment)`` when a data file
is opened (its id and row count not known yet: 0), ``complete(fragment)`` when it is
written. :class:`FileSystemFragmentWriteProgress` records both in a folder, so a
driver can find the fragments a failed worker left: ``fragment_<id>.in_progress``
(``{"fragment_id", "metadata"}``) from begin to complete, and ``fragment_<id>.json``
(the fragment's JSON as of begin).

A bar is drawn only when stderr is a terminal: with ``tqdm`` when it is installed
(not a dependency), otherwise as one line rewritten in place. Anything else (a
log file, a pipe, a test capturing stderr) gets no bar; the commands print their
summary lines as before.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # (the CLI imports this module first thing: it stays light)
    from lancenb.table.fragments import FragmentMetadata

__all__ = ["ProgressBar", "progress_bar", "FragmentWriteProgress",
           "NoopFragmentWriteProgress", "FileSystemFragmentWriteProgress", "IndexProgress"]

_MIN_REDRAW_S = 0.1  # at most ten redraws a second: a bar must not slow the work
_WIDTH = 30


class ProgressBar:
    """A bar on stderr: ``update(n)`` adds ``n`` units; ``close()`` ends the line.

    ``total`` None draws a count without a bar. Use :func:`progress_bar` to get
    one that is a no-op when stderr is not a terminal.
    """

    def __init__(self, desc: str, total: int | None = None, unit: str = "rows",
                 stream=None):
        self.desc, self.total, self.unit = desc, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.n = 0
        self.start = self._last = time.perf_counter()

    def update(self, n: int) -> None:
        self.n += int(n)
        now = time.perf_counter()
        if now - self._last >= _MIN_REDRAW_S:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        dt = max(1e-9, now - self.start)
        rate = f"{self.n / dt:,.0f} {self.unit}/s"
        if self.total:
            frac = min(1.0, self.n / self.total)
            done = int(frac * _WIDTH)
            bar = "#" * done + "." * (_WIDTH - done)
            text = (f"{self.desc} [{bar}] {100 * frac:3.0f}% {self.n:,}/{self.total:,} "
                    f"{self.unit}, {dt:.1f} s, {rate}")
        else:
            text = f"{self.desc}: {self.n:,} {self.unit}, {dt:.1f} s, {rate}"
        self.stream.write("\r" + text + "\x1b[K")  # (erase what a longer line left)
        self.stream.flush()

    def close(self) -> None:
        self._draw(time.perf_counter())
        self.stream.write("\n")
        self.stream.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class _TqdmBar:
    def __init__(self, desc: str, total: int | None, unit: str):
        from tqdm import tqdm

        self._bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr)

    def update(self, n: int) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress_bar(desc: str, total: int | None = None, *, unit: str = "rows",
                 enabled: bool | None = None):
    """A progress bar when ``enabled`` (default: stderr is a terminal), else an
    object whose ``update``/``close`` do nothing. tqdm draws it when installed.

    Examples
    --------
    >>> with progress_bar("converting", total=1000) as bar:  # doctest: +SKIP
    ...     bar.update(500)
    """
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return _NoBar()
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return ProgressBar(desc, total, unit)
    return _TqdmBar(desc, total, unit)


class FragmentWriteProgress(ABC):
    """Callbacks of a fragment write (experimental in pylance too): subclass it and
    pass an instance as ``progress=``.

    Examples
    --------
    >>> class Count(FragmentWriteProgress):
    ...     def __init__(self):
    ...         self.done = 0
    ...     def begin(self, fragment, **kwargs):
    ...         pass
    ...     def complete(self, fragment, **kwargs):
    ...         self.done += 1
    """

    @abstractmethod
    def begin(self, fragment: FragmentMetadata, **kwargs) -> None:
        """A data file of ``fragment`` is about to be written (its id may not be
        assigned yet)."""

    @abstractmethod
    def complete(self, fragment: FragmentMetadata, **kwargs) -> None:
        """``fragment``'s data file is written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """Progress that does nothing (the default)."""

    def begin(self, fragment: FragmentMetadata, **kwargs) -> None:
        """Nothing."""

    def complete(self, fragment: FragmentMetadata, **kwargs) -> None:
        """Nothing."""


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records writes in progress under ``base_uri`` (any URI lancenb writes to):
    see the module docstring for the files. ``metadata``: extra strings stored in
    each in-progress file (which worker wrote it, say).

    Examples
    --------
    >>> import tempfile
    >>> progress = FileSystemFragmentWriteProgress(tempfile.mkdtemp(), {"worker": "3"})
    """

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri, metadata: dict[str, str] | None = None):
        from lancenb.io.store import ObjectStore  # (not at import: see above)

        self._store = ObjectStore(base_uri)
        self._metadata = dict(metadata) if metadata else {}

    def _in_progress_path(self, fragment: FragmentMetadata) -> str:
        return f"fragment_{fragment.id}{self.PROGRESS_EXT}"

    def _fragment_file(self, fragment: FragmentMetadata) -> str:
        return f"fragment_{fragment.id}.json"

    def begin(self, fragment: FragmentMetadata, **kwargs) -> None:
        """Write ``fragment_<id>.in_progress`` and ``fragment_<id>.json``."""
        meta = fragment.to_json()  # (physical_rows null: not counted yet, as pylance)
        progress = {"fragment_id": fragment.id, "metadata": self._metadata}
        self._store.write_bytes(self._in_progress_path(fragment),
                                json.dumps(progress).encode())
        self._store.write_bytes(self._fragment_file(fragment), json.dumps(meta).encode())

    def complete(self, fragment: FragmentMetadata, **kwargs) -> None:
        """Remove ``fragment_<id>.in_progress``."""
        self._store.delete(self._in_progress_path(fragment))


@dataclasses.dataclass(frozen=True)
class IndexProgress:
    """A progress event of an index build: ``event`` (``start``, ``progress``,
    ``complete``) of ``stage``, with ``completed`` of ``total`` ``unit`` when known.

    Examples
    --------
    >>> IndexProgress("progress", "train", completed=3, total=4).fraction
    0.75
    """

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: int | None = None
    total: int | None = None
    unit: str = ""

    @property
    def fraction(self) -> float | None:
        """``completed / total`` (at most 1), None when either is unknown or total is 0."""
        if self.completed is None or not self.total:
            return None
        return min(self.completed / self.total, 1.0)
