"""Statistics of many same-shaped columns in one call (a writer of a wide table has
thousands of small pages: one kernel call each costs more than the work).

``hll_fixed_rows`` is :func:`stats.hll_fixed` then :func:`stats.hll_estimate` for every
row of a 2-D array, each row one page's fixed-width values: the same sketches and the
same estimates as the per-page calls, without a dispatch and a register allocation
per page.
"""

from ._jit import kernel
from .stats import BAD_REGISTERS, BAD_SIZE, OK, hll_estimate, hll_fixed


@kernel
def hll_fixed_rows(data, width, seed, registers, out):
    """HyperLogLog estimate of the distinct ``width``-byte values of each row of
    ``data`` (2-D uint8) into ``out`` (float64, one per row); ``registers`` (2-D uint8,
    one zeroed sketch of 2**p entries per row) receives the sketches. Returns OK,
    ``BAD_SIZE`` (shapes disagree or a row is not whole values) or ``BAD_REGISTERS``."""
    rows = data.shape[0]
    if registers.shape[0] != rows or out.shape[0] != rows:
        return BAD_SIZE
    for r in range(rows):
        reg = registers[r]
        n = hll_fixed(data[r], width, seed, reg)
        if n < 0:
            return n
        est = hll_estimate(reg)
        if est < 0:
            return BAD_REGISTERS
        out[r] = est
    return OK


__all__ = ["hll_fixed_rows", "OK", "BAD_SIZE", "BAD_REGISTERS"]
