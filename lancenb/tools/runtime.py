"""Facts about this process: lancenb's I/O so far and the CPU features its Numba
kernels are compiled for (pylance's ``iops_counter``, ``bytes_read_counter`` and
``simd_info``)."""

from __future__ import annotations

import platform

from llvmlite import binding

from lancenb.io import PROCESS_IO

__all__ = ["iops_counter", "bytes_read_counter", "simd_info"]


def iops_counter() -> int:
    """Read requests lancenb made in this process so far."""
    return PROCESS_IO.reads


def bytes_read_counter() -> int:
    """Bytes lancenb read in this process so far."""
    return PROCESS_IO.bytes_read


_TIERS = (("avx512_fp16", ("avx512fp16", "avx512f", "avx512bw", "avx512vl")),
          ("avx512", ("avx512f", "avx512bw", "avx512vl")), ("avx2", ("avx2", "fma")),
          ("sse4.2", ("sse4.2",)), ("neon", ("neon",)))
_REPORTED = ("sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma",
             "f16c", "bmi1", "bmi2", "avx512f", "avx512bw", "avx512vl", "avx512dq",
             "avx512cd", "avx512fp16", "neon")


def simd_info() -> dict:
    """``{"tier", "target_arch", "host_features"}``: the SIMD features of this CPU as
    LLVM (which compiles lancenb's Numba kernels) sees them."""
    feats = binding.get_host_cpu_features()
    names = {"bmi": "bmi1", "sse4.1": "sse4.1"}
    have = {names.get(k, k) for k, v in feats.items() if v}
    arch = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(arch, arch)
    if arch == "aarch64":
        have.add("neon")  # always present on 64-bit ARM
    host = [f for f in _REPORTED if f in have]
    tier = next((t for t, need in _TIERS if all(n in have for n in need)), "scalar")
    return {"tier": tier, "target_arch": arch, "host_features": host}
