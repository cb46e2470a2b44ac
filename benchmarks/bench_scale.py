#!/usr/bin/env python
"""Cost that grows with fragments, versions and columns (issue 23): lancenb vs pylance
in one run, at several counts, with the per-item slope of each.

Run from the repository root::

    python benchmarks/bench_scale.py [--counts 10,100,1000] [--repeat K]
                                     [--out benchmarks/RESULTS.md] [--tag before|after]

Workloads (pylance writes every dataset; both libraries read the same files):

* fragments: N fragments of 100 rows (one write, ``max_rows_per_file=100``); scan of
  ``id``, ``count_rows("id % 7 = 0")``, ``take`` of 3 rows (first, middle, last);
* versions: N appends of 100 rows; ``versions()`` on a freshly opened dataset;
* columns: N float64 columns x 2,000 rows; open + read one column, full scan, take 2 rows.

Times are medians of K runs after one warm-up; the slope is the least-squares cost per
item (ms per fragment / version / column) over the counts run. Results are checked
against each other (a mismatch aborts). No timing assertions: this only measures.
Figures go between the ``bench_scale`` markers of RESULTS.md; ``--tag`` names the
sub-section (so a "before" and an "after" table can both be kept).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

ROWS_PER_FRAGMENT = 100
COLUMN_ROWS = 2_000


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def median_ms(fn, repeat: int) -> tuple[float, float]:
    """Medians of wall time and of this process's CPU time (all threads), ms. On a
    shared, loaded machine the CPU time is the steadier measure of the work done."""
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(wall), statistics.median(cpu)


def same(a, b, what: str) -> None:
    if isinstance(a, pa.Table):
        a, b = a.combine_chunks(), b.combine_chunks()
        if not a.equals(b):
            raise SystemExit(f"{what}: lancenb and pylance disagree")
    elif a != b:
        raise SystemExit(f"{what}: lancenb {a!r} != pylance {b!r}")


def workloads_fragments(root: str, n: int):
    import lance

    import lancenb

    path = os.path.join(root, f"frag{n}")
    total = n * ROWS_PER_FRAGMENT
    lance.write_dataset(pa.table({"id": np.arange(total, dtype=np.int64),
                                  "x": np.arange(total, dtype=np.float64)}),
                        path, max_rows_per_file=ROWS_PER_FRAGMENT)
    idx = [0, total // 2, total - 1]
    for name, op in (
            ("fragments: scan id", lambda m: m.dataset(path).to_table(columns=["id"])),
            ("fragments: count_rows(id % 7 = 0)",
             lambda m: m.dataset(path).count_rows("id % 7 = 0")),
            ("fragments: take 3 rows", lambda m: m.dataset(path).take(idx))):
        yield name, (lambda op=op: op(lancenb)), (lambda op=op: op(lance))


def workloads_versions(root: str, n: int):
    import lance

    import lancenb

    path = os.path.join(root, f"ver{n}")
    t = pa.table({"id": np.arange(ROWS_PER_FRAGMENT, dtype=np.int64)})
    lance.write_dataset(t, path)
    for _ in range(n - 1):
        lance.write_dataset(t, path, mode="append")

    def vers(m):
        return [v["version"] for v in m.dataset(path).versions()]

    yield "versions: versions()", (lambda: vers(lancenb)), (lambda: vers(lance))


def workloads_columns(root: str, n: int):
    import lance

    import lancenb

    path = os.path.join(root, f"col{n}")
    rng = np.random.default_rng(3)
    data = rng.random((n, COLUMN_ROWS))
    lance.write_dataset(pa.table({f"c{i}": data[i] for i in range(n)}), path)
    mid = f"c{n // 2}"
    for name, op in (
            ("columns: open + read one column",
             lambda m: m.dataset(path).to_table(columns=[mid])),
            ("columns: full scan", lambda m: m.dataset(path).to_table()),
            ("columns: take 2 rows", lambda m: m.dataset(path).take([1, COLUMN_ROWS - 2]))):
        yield name, (lambda op=op: op(lancenb)), (lambda op=op: op(lance))


FAMILIES = {"fragments": workloads_fragments, "versions": workloads_versions,
            "columns": workloads_columns}


def slope(xs, ys) -> float:
    if len(xs) < 2:
        return float("nan")
    return float(np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)[0])


def run(counts, repeat: int, families) -> dict:
    """{workload: [(count, lancenb_ms, pylance_ms), ...]}"""
    out: dict = {}
    root = tempfile.mkdtemp(prefix="bench_scale_")
    try:
        for fam in families:
            for n in counts:
                for name, ours, theirs in FAMILIES[fam](root, n):
                    same(ours(), theirs(), f"{name} at {n}")
                    a, ac = median_ms(ours, repeat)
                    b, bc = median_ms(theirs, repeat)
                    out.setdefault(name, []).append((n, a, b, ac, bc))
                    log(f"{name:36} n={n:6}  lancenb {a:9.2f} ms ({ac:9.2f} cpu)  pylance "
                        f"{b:9.2f} ms ({bc:9.2f} cpu)  ratio {a / b:5.2f} (cpu {ac / bc:5.2f})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


def render(res: dict, counts, repeat: int, tag: str) -> str:
    import lance

    lines = [f"### {tag}", "",
             f"{platform.machine()}, {os.cpu_count()} cores (shared), pylance "
             f"{lance.__version__}; medians of {repeat} runs after a warm-up, ms; "
             "ratio = lancenb / pylance; cpu = the process's CPU time (all threads), the "
             "steadier figure on a loaded machine; slope = wall ms per item (least squares "
             "over the counts).",
             "",
             "| workload | count | lancenb ms | pylance ms | ratio | lancenb cpu ms | "
             "pylance cpu ms | cpu ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rows in res.items():
        for n, a, b, ac, bc in rows:
            lines.append(f"| {name} | {n:,} | {a:.2f} | {b:.2f} | {a / b:.2f} | {ac:.2f} | "
                         f"{bc:.2f} | {ac / max(bc, 1e-3):.2f} |")
    lines += ["", "| workload | lancenb slope ms/item | pylance slope ms/item |",
              "|---|---:|---:|"]
    for name, rows in res.items():
        xs = [r[0] for r in rows]
        lines.append(f"| {name} | {slope(xs, [r[1] for r in rows]):.4f} | "
                     f"{slope(xs, [r[2] for r in rows]):.4f} |")
    return "\n".join(lines) + "\n"


def _png(path: str, img: np.ndarray) -> None:
    """Write an RGB uint8 image as a PNG (zlib and struct only: no plotting library)."""
    import struct
    import zlib

    h, w, _ = img.shape
    raw = b"".join(b"\0" + img[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def plot(res: dict, path: str) -> None:
    """One panel per workload (in the order of the RESULTS.md table), time against
    count on log-log axes spanning the panel's own range: lancenb red, pylance blue."""
    W, H, PAD = 260, 180, 14
    names = list(res)
    cols = 4
    rows_n = (len(names) + cols - 1) // cols
    img = np.full((rows_n * H, cols * W, 3), 255, np.uint8)
    for k, name in enumerate(names):
        oy, ox = (k // cols) * H, (k % cols) * W
        img[oy + PAD:oy + H - PAD, ox + PAD] = 0  # axes
        img[oy + H - PAD, ox + PAD:ox + W - PAD] = 0
        pts = res[name]
        xs = np.log10([p[0] for p in pts])
        ys = np.log10(np.maximum([v for p in pts for v in p[1:3]], 1e-3))
        x0, x1 = xs.min(), max(xs.max(), xs.min() + 1e-9)
        y0, y1 = ys.min(), max(ys.max(), ys.min() + 1e-9)

        for col, color in ((1, (220, 30, 30)), (2, (30, 60, 220))):
            line = [(oy + H - PAD - (np.log10(max(p[col], 1e-3)) - y0) / (y1 - y0)
                     * (H - 3 * PAD),
                     ox + PAD + (np.log10(p[0]) - x0) / (x1 - x0) * (W - 3 * PAD))
                    for p in pts]
            for (ya, xa), (yb, xb) in zip(line, line[1:]):
                for t in np.linspace(0, 1, 400):
                    y, x = int(ya + (yb - ya) * t), int(xa + (xb - xa) * t)
                    img[y - 1:y + 2, x - 1:x + 2] = color
    _png(path, img)


def update_results(path: str, section: str, tag: str) -> None:
    start, end = "<!-- bench_scale:start -->", "<!-- bench_scale:end -->"
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    old = ""
    a = text.find(start)
    if a != -1 and text.find(end, a) != -1:
        old = text[a + len(start):text.find(end, a)]
    # keep the other tags' sub-sections
    parts: dict = {}
    cur = None
    for line in old.splitlines(keepends=True):
        if line.startswith("### "):
            cur = line[4:].strip()
            parts[cur] = line
        elif cur is not None:
            parts[cur] += line
    parts[tag] = section + "\n"
    head = ("## Scale: fragments, versions, columns (bench_scale.py, issue 23)\n\n"
            "`python benchmarks/bench_scale.py --tag after`; plot: "
            "`benchmarks/bench_scale.png` (one panel per workload in the table's order, "
            "wall time against count on log-log axes, lancenb red, pylance blue; drawn "
            "without a plotting library, matplotlib is not a dependency).\n\n")
    block = start + "\n" + head + "".join(parts[k] for k in sorted(parts)) + end
    replace_section(path, block, start, end)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="10,100,1000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--families", default="fragments,versions,columns")
    ap.add_argument("--tag", default="after")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    res = run(counts, args.repeat, args.families.split(","))
    section = render(res, counts, args.repeat, args.tag)
    print(section)
    if not args.no_write:
        update_results(args.out, section, args.tag)
        plot(res, os.path.join(os.path.dirname(os.path.abspath(args.out)), "bench_scale.png"))


if __name__ == "__main__":
    main()
