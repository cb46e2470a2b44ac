"""Peak memory of one step of a benchmark's child process (Linux ``/proc``).

``reset_peak()`` lowers the kernel's high-water mark (``VmHWM``) to the current RSS and
returns that RSS; after the step, ``peak_since(base)`` is how far above it the process
went. Elsewhere (no ``/proc``) both give 0.
"""

from __future__ import annotations

__all__ = ["proc_status", "reset_peak", "peak_since"]


def proc_status(field: str) -> int:
    """A ``/proc/self/status`` size field (``VmRSS``, ``VmHWM``) in bytes, or 0."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak() -> int:
    """Reset the high-water mark to the current RSS; returns that RSS in bytes."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return proc_status("VmRSS")


def peak_since(base: int) -> int:
    """Bytes the peak RSS rose above ``base`` (from :func:`reset_peak`)."""
    return proc_status("VmHWM") - base
