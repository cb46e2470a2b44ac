"""Progress bars for long command-line work (``lancenb convert``, ``lancenb compact``).

A bar is drawn only when stderr is a terminal: with ``tqdm`` when it is installed
(not a dependency), otherwise as one line rewritten in place. Anything else (a
log file, a pipe, a test capturing stderr) gets no bar; the commands print their
summary lines as before.
"""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar", "progress_bar"]

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
