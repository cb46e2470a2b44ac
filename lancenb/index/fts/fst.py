"""Reading the keys and values of an FST map (the ``fst`` crate's format, version 3),
which pylance 14 uses for an INVERTED index's vocabulary (``_token_fst_bytes``).

Layout: a 16-byte header (version, type), nodes written backwards (a node's state byte
at its address, its data below it), and a footer of key count, root address and a
checksum. Only enumeration is needed: every key with its value (the token id).
"""

from __future__ import annotations

from lancenb.errors import CorruptFileError

__all__ = ["fst_keys"]

# the bytes a one-transition node can name by a 6-bit code (fst's COMMON_INPUTS_INV)
_COMMON = b"te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHGW"


def _uint(data: bytes, at: int, n: int) -> int:
    return int.from_bytes(data[at:at + n], "little") if n else 0


def _delta(data: bytes, at: int, n: int, end: int) -> int:
    d = _uint(data, at, n)
    return 0 if d == 0 else end - d


def _node(data: bytes, version: int, addr: int):
    """``(is_final, final output, [(input byte, output, target address)])``."""
    if addr == 0:
        return True, 0, []
    v = data[addr]
    kind = v >> 6
    if kind == 0b11:  # one transition to the node just below, no output
        common = v & 0x3F
        inp = _COMMON[common - 1] if common else data[addr - 1]
        end = addr - (0 if common else 1)
        return False, 0, [(inp, 0, end - 1)]
    if kind == 0b10:  # one transition
        common = v & 0x3F
        ilen = 0 if common else 1
        inp = _COMMON[common - 1] if common else data[addr - 1]
        sizes = data[addr - ilen - 1]
        tsize, osize = sizes >> 4, sizes & 0x0F
        end = addr - ilen - 1 - tsize - osize
        target = _delta(data, addr - ilen - 1 - tsize, tsize, end)
        out = _uint(data, addr - ilen - 1 - tsize - osize, osize)
        return False, 0, [(inp, out, target)]
    final = bool(v & 0x40)
    n = v & 0x3F
    nlen = 0
    if n == 0:
        nlen = 1
        n = data[addr - 1]
        n = 256 if n == 1 else n
    sizes = data[addr - nlen - 1]
    tsize, osize = sizes >> 4, sizes & 0x0F
    index = 256 if version >= 2 and n > 32 else 0
    total = n + n * tsize + index
    end = addr - nlen - 1 - total - n * osize - (osize if final else 0)
    fout = _uint(data, addr - nlen - 1 - total - n * osize - osize, osize) \
        if final and osize else 0
    trans = []
    for i in range(n):
        inp = data[addr - nlen - 1 - index - i - 1]
        t = _delta(data, addr - nlen - 1 - index - n - i * tsize - tsize, tsize, end)
        out = _uint(data, addr - nlen - 1 - total - i * osize - osize, osize) if osize else 0
        trans.append((inp, out, t))
    return final, fout, trans


def fst_keys(data: bytes) -> tuple[list[str], list[int]]:
    """Every key (as UTF-8 text) and value of the FST map ``data``."""
    if len(data) < 32:
        raise CorruptFileError("FST token set: too short")
    version = _uint(data, 0, 8)
    end = len(data) - (4 if version >= 3 else 0)
    root = _uint(data, end - 8, 8)
    count = _uint(data, end - 16, 8)
    keys: list[str] = []
    values: list[int] = []
    stack = [(root, b"", 0)]
    while stack:
        addr, prefix, acc = stack.pop()
        final, fout, trans = _node(data, version, addr)
        if final:
            keys.append(prefix.decode("utf-8", "replace"))
            values.append(acc + fout)
        for inp, out, target in trans:
            stack.append((target, prefix + bytes([inp]), acc + out))
    if len(keys) != count:
        raise CorruptFileError(f"FST token set: {len(keys)} keys read, {count} expected")
    return keys, values
