#!/usr/bin/env python
"""Cost that grows with fragments, versions and columns (issue 23): lancenb vs pylance
in one run, at several counts, with the per-item slope of each.

Run from the repository root::

    python benchmarks/bench_scale.py [--counts 10,100,1000,10000] [--repeat K]
        [--data-dir DIR] [--budget SECONDS] [--json FILE] [--replot FILE]
        [--out benchmarks/RESULTS.md] [--tag before|after]

``--data-dir`` keeps the datasets (10,000 versions take pylance ~20 minutes of appends to
make) and reuses them on the next run; ``--budget`` (300 s) bounds the measuring of one
family at one count: counts whose extrapolated cost passes it are skipped, and
``OVER_BUDGET`` names library runs known to pass it alone; skips are listed under the
table.

Workloads (pylance writes every dataset; both libraries read the same files):

* fragments: N fragments of 100 rows (one write, ``max_rows_per_file=100``); scan of
  ``id``, ``count_rows("id % 7 = 0")``, ``take`` of 3 rows (first, middle, last);
* versions: N appends of 100 rows; ``versions()`` on a freshly opened dataset; opening
  the latest version;
* columns: N float64 columns x 2,000 rows; open + read one column, full scan, take 2 rows.

Times are medians of K runs after one warm-up; the slope is the least-squares cost per
item (ms per fragment / version / column) over the counts run. Results are checked
against each other (a mismatch aborts). No timing assertions: this only measures.
Figures go between the ``bench_scale`` markers of RESULTS.md; ``--tag`` names the
sub-section (so a "before" and an "after" table can both be kept).
"""

from __future__ import annotations

import argparse
import json
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


class made:
    """``if made(path): <create the dataset at path>``: true (and ``path`` cleared)
    when ``path`` holds no complete dataset from an earlier run; the body runs, then
    a marker file records that it finished, so an interrupted creation is redone and
    a finished one reused (``--data-dir``)."""

    MARKER = ".bench_scale_complete"

    def __init__(self, path: str):
        self.path = path
        self.t0 = time.perf_counter()

    def __bool__(self) -> bool:
        if os.path.exists(os.path.join(self.path, self.MARKER)):
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        _PENDING.append(self)
        return True

    def done(self) -> None:
        with open(os.path.join(self.path, self.MARKER), "w") as f:
            f.write(f"{time.perf_counter() - self.t0:.1f} s to create\n")
        log(f"created {self.path} in {time.perf_counter() - self.t0:.1f} s")


_PENDING: list = []  # creations begun, marked complete once their workloads are yielded


def workloads_fragments(root: str, n: int):
    import lance

    import lancenb

    path = os.path.join(root, f"frag{n}")
    total = n * ROWS_PER_FRAGMENT
    if made(path):
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
    if made(path):
        lance.write_dataset(t, path)
        for _ in range(n - 1):
            lance.write_dataset(t, path, mode="append")

    def vers(m):
        return [v["version"] for v in m.dataset(path).versions()]

    yield "versions: versions()", (lambda: vers(lancenb)), (lambda: vers(lance))
    # finding the newest version (lancenb: the hint plus a few existence checks)
    yield ("versions: open latest", (lambda: lancenb.dataset(path).version),
           (lambda: lance.dataset(path).version))


def workloads_columns(root: str, n: int):
    import lance

    import lancenb

    path = os.path.join(root, f"col{n}")
    if made(path):
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


# (family, count, library) -> why it is not run: one call alone is past the budget
OVER_BUDGET = {
    ("versions", 10_000, "pylance"):
        "one pylance versions() call at 10,000 versions took 487 s wall (151 s CPU) on "
        "2026-11-25, past the budget by itself",
}


def run(counts, repeat: int, families, root: str, budget: float) -> tuple[dict, list]:
    """``({workload: [(count, lancenb_ms, pylance_ms, lancenb_cpu, pylance_cpu,
    repeats)]}, [skip notes])``; pylance's figures are None where it was not run.

    ``budget`` (s) bounds the measuring of one family at one count: a count whose
    cost, extrapolated from the two counts before it with the growth they show, would
    pass it is skipped, and a workload whose single checking call is slow is timed
    with fewer repeats (at least one)."""
    out: dict = {}
    notes: list = []
    for fam in families:
        spent: list = []  # (count, seconds measuring lancenb, seconds measuring pylance)
        for n in counts:
            skip_theirs = OVER_BUDGET.get((fam, n, "pylance"))
            if spent:  # cost grows at least linearly, faster if the last two counts say so
                est = 0.0
                for lib in (1,) if skip_theirs else (1, 2):
                    n1, t1 = spent[-1][0], spent[-1][lib]
                    n0, t0 = (spent[-2][0], spent[-2][lib]) if len(spent) > 1 else (n1, t1)
                    grow = 1.0 if n0 == n1 else max(1.0, np.log(t1 / t0) / np.log(n1 / n0))
                    est += t1 * (n / n1) ** grow
                if est > budget:
                    notes.append(f"{fam} at {n:,}: skipped, measuring would take ~{est:.0f} s "
                                 f"(extrapolated from {n1:,}), past the {budget:.0f} s budget")
                    log(notes[-1])
                    continue
            if skip_theirs:
                notes.append(f"{fam} at {n:,}: pylance not run: {skip_theirs}")
                log(notes[-1])
            try:
                cost = _measure(fam, n, repeat, root, budget, bool(skip_theirs), out)
            except Exception as e:  # noqa: BLE001  (a library failing is a finding: go on)
                notes.append(f"{fam} at {n:,}: failed: {type(e).__name__}: {e}")
                log(notes[-1])
                continue
            spent.append((n, max(cost[0], 1e-3), max(cost[1], 1e-3)))
    return out, notes


def _measure(fam: str, n: int, repeat: int, root: str, budget: float, skip_theirs: bool,
             out: dict) -> tuple[float, float]:
    """Time one family's workloads at one count into ``out``. Returns the seconds
    measuring lancenb and pylance takes, from the medians x the calls (not the clock:
    the first count's calls include compiling)."""
    cost = [0.0, 0.0]
    per_call = budget / 3 / 2  # three workloads a family, two libraries
    for name, ours, theirs in FAMILIES[fam](root, n):
        while _PENDING:  # the dataset exists once the first workload is yielded
            _PENDING.pop().done()
        c0 = time.perf_counter()
        got = ours()
        t_max = time.perf_counter() - c0
        if not skip_theirs:
            c0 = time.perf_counter()
            same(got, theirs(), f"{name} at {n}")
            t_max = max(t_max, time.perf_counter() - c0)
        reps = max(1, min(repeat, int(per_call / max(t_max, 1e-6)) - 1))
        a, ac = median_ms(ours, reps)
        b, bc = (None, None) if skip_theirs else median_ms(theirs, reps)
        out.setdefault(name, []).append((n, a, b, ac, bc, reps))
        cost[0] += a * (repeat + 2) / 1e3
        cost[1] += (b or 0.0) * (repeat + 2) / 1e3
        if b is None:
            log(f"{name:36} n={n:6}  lancenb {a:9.2f} ms ({ac:9.2f} cpu)  pylance "
                f"not run  ({reps} repeats)")
        else:
            log(f"{name:36} n={n:6}  lancenb {a:9.2f} ms ({ac:9.2f} cpu)  pylance "
                f"{b:9.2f} ms ({bc:9.2f} cpu)  ratio {a / b:5.2f} (cpu {ac / bc:5.2f})"
                f"  ({reps} repeats)")
    return cost[0], cost[1]


def _f(x, fmt: str = ".2f") -> str:
    return "—" if x is None else format(x, fmt)


def render(res: dict, notes: list, repeat: int, tag: str) -> str:
    import lance

    lines = [f"### {tag}", "",
             f"{platform.machine()}, {os.cpu_count()} cores (shared), pylance "
             f"{lance.__version__}; medians of {repeat} runs after a warm-up (fewer where "
             "one call is slow: the repeats column), ms; ratio = lancenb / pylance; cpu = the "
             "process's CPU time (all threads), the steadier figure on a loaded machine; "
             "slope = wall ms per item (least squares over the counts each library ran).",
             "",
             "| workload | count | lancenb ms | pylance ms | ratio | lancenb cpu ms | "
             "pylance cpu ms | cpu ratio | repeats |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rows in res.items():
        for n, a, b, ac, bc, reps in rows:
            lines.append(f"| {name} | {n:,} | {a:.2f} | {_f(b)} | "
                         f"{_f(None if b is None else a / b)} | {ac:.2f} | {_f(bc)} | "
                         f"{_f(None if bc is None else ac / max(bc, 1e-3))} | {reps} |")
    lines += ["", "| workload | lancenb slope ms/item | pylance slope ms/item | "
              "lancenb cpu slope | pylance cpu slope | counts (pylance) |",
              "|---|---:|---:|---:|---:|---|"]
    for name, rows in res.items():
        theirs = [r for r in rows if r[2] is not None]
        ns, tn = [r[0] for r in rows], [r[0] for r in theirs]
        lines.append(f"| {name} | {slope(ns, [r[1] for r in rows]):.4f} | "
                     f"{slope(tn, [r[2] for r in theirs]):.4f} | "
                     f"{slope(ns, [r[3] for r in rows]):.4f} | "
                     f"{slope(tn, [r[4] for r in theirs]):.4f} | "
                     f"{ns[0]:,}..{ns[-1]:,} ({tn[0]:,}..{tn[-1]:,}) |")
    if notes:
        lines += [""] + [f"- {x}" for x in notes]
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


# a 3x5 pixel font for the panel titles and axis labels (no plotting library here):
# each glyph is five rows of three pixels, "/" between rows
_GLYPHS = {
    "a": "111/101/111/101/101", "b": "110/101/110/101/110", "c": "111/100/100/100/111",
    "d": "110/101/101/101/110", "e": "111/100/110/100/111", "f": "111/100/110/100/100",
    "g": "111/100/101/101/111", "h": "101/101/111/101/101", "i": "111/010/010/010/111",
    "j": "111/001/001/101/111", "k": "101/110/100/110/101", "l": "100/100/100/100/111",
    "m": "101/111/101/101/101", "n": "110/101/101/101/101", "o": "111/101/101/101/111",
    "p": "111/101/111/100/100", "q": "111/101/101/111/011", "r": "110/101/110/101/101",
    "s": "111/100/111/001/111", "t": "111/010/010/010/010", "u": "101/101/101/101/111",
    "v": "101/101/101/101/010", "w": "101/101/101/111/101", "x": "101/101/010/101/101",
    "y": "101/101/111/001/111", "z": "111/001/010/100/111", "0": "111/101/101/101/111",
    "1": "010/110/010/010/111", "2": "111/001/111/100/111", "3": "111/001/111/001/111",
    "4": "101/101/111/001/001", "5": "111/100/111/001/111", "6": "111/100/111/101/111",
    "7": "111/001/010/010/010", "8": "111/101/111/101/111", "9": "111/101/111/001/111",
    ":": "000/010/000/010/000", "(": "010/100/100/100/010", ")": "010/001/001/001/010",
    "%": "101/001/010/100/101", "=": "000/111/000/111/000", "+": "000/010/111/010/000",
    "_": "000/000/000/000/111", ".": "000/000/000/000/010", ",": "000/000/000/010/100",
    "-": "000/000/111/000/000", "/": "001/001/010/100/100", " ": "000/000/000/000/000",
}


def _text(img: np.ndarray, y: int, x: int, text: str, color=(0, 0, 0), scale: int = 2) -> None:
    for c in text.lower():
        g = _GLYPHS.get(c)
        if g is not None:
            for gy, row in enumerate(g.split("/")):
                for gx, bit in enumerate(row):
                    if bit == "1":
                        img[y + gy * scale:y + (gy + 1) * scale,
                            x + gx * scale:x + (gx + 1) * scale] = color
        x += 4 * scale


def _fmt_ms(v: float) -> str:
    return f"{v:.3g} ms" if v < 1000 else f"{v / 1000:.3g} s"


def plot(res: dict, path: str) -> None:
    """One panel per workload (in the order of the RESULTS.md table), titled, wall
    time against count on log-log axes spanning the panel's own range, each count and
    the lowest and highest time labelled: lancenb solid red, pylance dashed blue."""
    W, H, L, T, B, R = 330, 210, 44, 26, 20, 12  # panel size, left/top/bottom/right margins
    red, blue = (220, 30, 30), (30, 60, 220)
    names = list(res)
    cols = 3
    rows_n = (len(names) + cols - 1) // cols
    img = np.full((rows_n * H + 24, cols * W, 3), 255, np.uint8)
    for k, name in enumerate(names):
        oy, ox = (k // cols) * H, (k % cols) * W
        _text(img, oy + 6, ox + 6, name)
        top, bottom, left, right = oy + T, oy + H - B, ox + L, ox + W - R
        img[top:bottom + 1, left] = 0  # axes
        img[bottom, left:right] = 0
        pts = res[name]
        xs = np.log10([p[0] for p in pts])
        vals = [v for p in pts for v in p[1:3] if v is not None]
        ys = np.log10(np.maximum(vals, 1e-3))
        x0, x1 = xs.min(), max(xs.max(), xs.min() + 1e-9)
        y0, y1 = ys.min(), max(ys.max(), ys.min() + 1e-9)

        box = (top, bottom, left, right, x0, x1, y0, y1)

        def at(n, v, box=box):
            top, bottom, left, right, x0, x1, y0, y1 = box
            return (bottom - 3 - (np.log10(max(v, 1e-3)) - y0) / (y1 - y0) * (bottom - top - 8),
                    left + 4 + (np.log10(n) - x0) / (x1 - x0) * (right - left - 30))

        for p in pts:  # x ticks and counts
            _, x = at(p[0], vals[0])
            img[bottom:bottom + 4, int(x)] = 0
            _text(img, bottom + 6, int(x) - 2, f"{p[0]}", scale=1)
        for v in (min(vals), max(vals)):  # y range
            y, _ = at(pts[0][0], v)
            img[int(y), left - 3:left] = 0
            _text(img, int(y) - 2, ox + 2, _fmt_ms(v), scale=1)
        for col, color, dashed in ((1, red, False), (2, blue, True)):
            line = [at(p[0], p[col]) for p in pts if p[col] is not None]
            for ya, xa in line:
                img[int(ya) - 2:int(ya) + 3, int(xa) - 2:int(xa) + 3] = color
            for (ya, xa), (yb, xb) in zip(line, line[1:]):
                for t in np.linspace(0, 1, 400):
                    if dashed and int(t * 16) % 2:
                        continue
                    y, x = int(ya + (yb - ya) * t), int(xa + (xb - xa) * t)
                    img[y - 1:y + 1, x - 1:x + 1] = color
    y = rows_n * H + 6
    _text(img, y, 8, "lancenb", red)
    _text(img, y, 8 + 8 * 8, "solid,")
    _text(img, y, 8 + 15 * 8, "pylance", blue)
    _text(img, y, 8 + 23 * 8, "dashed. wall time against count, log-log")
    _png(path, img)


def update_results(path: str, section: str, tag: str) -> None:
    start, end = "<!-- bench_scale:start -->", "<!-- bench_scale:end -->"
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    old = ""
    a = text.find(start)
    if a != -1 and text.find(end, a) != -1:
        old = text[a + len(start):text.find(end, a)]
    # keep the other tags' sub-sections, and the prose between the heading and them
    parts: dict = {}
    cur = None
    prose = ""
    for line in old.splitlines(keepends=True):
        if line.startswith("### "):
            cur = line[4:].strip()
            parts[cur] = line
        elif cur is not None:
            parts[cur] += line
        elif not line.startswith(("## Scale:", "`python benchmarks/bench_scale.py")):
            prose += line
    parts[tag] = section + "\n"
    head = ("## Scale: fragments, versions, columns (bench_scale.py, issue 23)\n\n"
            "`python benchmarks/bench_scale.py --data-dir DIR --tag after`; plot: "
            "`benchmarks/bench_scale.png` (one panel per workload, titled, in the table's "
            "order: wall time against count on log-log axes, lancenb solid red, pylance "
            "dashed blue, each panel spanning its own range; drawn without a plotting "
            "library, matplotlib is not a dependency).\n")
    prose = "\n" + prose.strip("\n") + "\n\n" if prose.strip() else "\n"
    block = (start + "\n" + head + prose
             + "".join(parts[k] for k in sorted(parts)) + end)
    replace_section(path, block, start, end)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--counts", default="10,100,1000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--families", default="fragments,versions,columns")
    ap.add_argument("--budget", type=float, default=300.0,
                    help="seconds for measuring one family at one count (default 300)")
    ap.add_argument("--data-dir", help="keep the datasets here and reuse them next run "
                    "(default: a temporary directory, removed at the end)")
    ap.add_argument("--json", help="also write the figures here (for --replot)")
    ap.add_argument("--replot", metavar="JSON",
                    help="only redraw the plot (and the section) from a --json file")
    ap.add_argument("--tag", default="after")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot) as f:
            saved = json.load(f)
        res, notes, repeat = saved["results"], saved["notes"], saved["repeat"]
    else:
        counts = [int(c) for c in args.counts.split(",")]
        root = args.data_dir or tempfile.mkdtemp(prefix="bench_scale_")
        os.makedirs(root, exist_ok=True)
        try:
            res, notes = run(counts, args.repeat, args.families.split(","), root, args.budget)
        finally:
            if not args.data_dir:
                shutil.rmtree(root, ignore_errors=True)
        repeat = args.repeat
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"results": res, "notes": notes, "repeat": repeat}, f, indent=1)
    section = render(res, notes, repeat, args.tag)
    print(section)
    if not args.no_write:
        update_results(args.out, section, args.tag)
        plot(res, os.path.join(os.path.dirname(os.path.abspath(args.out)), "bench_scale.png"))


if __name__ == "__main__":
    main()
