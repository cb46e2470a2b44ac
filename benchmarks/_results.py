"""Writing one benchmark's figures into ``benchmarks/RESULTS.md``.

Each benchmark owns a section between ``<!-- name:start -->`` and ``<!-- name:end -->``
markers; re-running it replaces that section and leaves the rest of the file alone.
"""

from __future__ import annotations

import os

__all__ = ["replace_section"]


def replace_section(path: str, block: str, start: str, end: str) -> None:
    """Put ``block`` (which begins with ``start`` and ends with ``end``) in place of
    the file's current section, or append it when the file has none."""
    text = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    a = text.find(start)
    b = text.find(end, a) if a != -1 else -1
    if a != -1 and b != -1:
        text = text[:a] + block + text[b + len(end):]
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
