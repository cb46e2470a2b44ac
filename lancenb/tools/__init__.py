"""lancenb's tools around the library: the ``lancenb`` command line (:mod:`.cli`, with the
demo ``make demo`` runs in :mod:`.demo`), the kernel cache warm-up (:mod:`.warmup`,
also ``lancenb.warmup()``), the ``import lance`` bridge (:mod:`.bridge`, ``python -m
lancenb.tools.bridge``), and facts about this process (:mod:`.runtime`: I/O counters and
the CPU features kernels are compiled for, ``lancenb.iops_counter`` and friends).

None of them is imported by the library's read and write paths.
"""
