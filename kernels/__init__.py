"""Numba kernels for lancenb (installed as ``lancenb.kernels``).

Rules (see STYLE.md): numpy + numba only; contiguous numpy arrays in; outputs passed
in by the caller (sized by a count pass where needed); an integer status out (0 = ok,
negative = the input is malformed); never raise inside a kernel. Every kernel has a
NumPy/Python reference in ``tests/kernels`` and a property test comparing the two.
"""

# the file next to a kernel module's numba cache files that says which parameters each
# of its kernels writes (see ``_jit.py``); ``lancenb.tools.warmup`` ships it with the cache
WRITTEN_SUFFIX = ".lancenb-written.json"
