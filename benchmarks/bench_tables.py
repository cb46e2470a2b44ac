"""Per-column file sizes and scan times on the issue-3 benchmark tables.

For every column of every table: lancenb's default 2.1 file vs pylance's 2.1 file
(sizes of the column's page buffers, read from the file metadata), lancenb's compact
profile (``LanceFileWriter(..., compression="compact")``) vs Parquet with zstd
(pyarrow's column-chunk sizes), and the time of a one-column scan, lancenb vs pylance
(default files, and the compact file read by lancenb). Every lancenb file is also read
back by pylance and compared with the input.

    python benchmarks/bench_tables.py [--rows N] [--repeat K] [--out benchmarks/RESULTS.md]

Writes the ``bench_tables`` section of RESULTS.md (between its markers).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_tables:start -->"
MARK_END = "<!-- bench_tables:end -->"

_WORDS = ("the quick brown fox jumps over lazy dog carefully furiously final pending "
          "regular express deposits accounts packages requests ironic special even "
          "slyly blithely quickly bold silent theodolites pinto beans foxes ideas").split()


def _text(rng, n, lo, hi):
    k = rng.integers(lo, hi + 1, n)
    picks = rng.integers(0, len(_WORDS), int(k.sum()))
    words = np.array(_WORDS, dtype=object)[picks]
    ends = np.cumsum(k)
    return [" ".join(words[e - c:e]) for c, e in zip(k.tolist(), ends.tolist())]


def make_tables(rows: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    n = rows
    t = {}
    t["ints"] = pa.table({
        "seq_i64": pa.array(np.arange(n, dtype=np.int64) + 1_000_000),
        "small_range_i32": pa.array(rng.integers(0, 1000, n).astype(np.int32)),
        "ts_seq": pa.array(1_700_000_000_000_000 + np.cumsum(rng.integers(0, 2_000_000, n)),
                           pa.timestamp("us")),
    })
    t["floats"] = pa.table({
        "walk_f64": pa.array(np.round(100 + np.cumsum(rng.normal(0, 0.01, n)), 4)),
        "walk_f32": pa.array(np.cumsum(rng.normal(0, 1, n)).astype(np.float32)),
        "price_f64": pa.array(np.round(rng.uniform(1, 1000, n), 2)),
    })
    cats = np.array([f"category_{i:03d}" for i in range(40)], dtype=object)
    t["sorted_lowcard"] = pa.table({
        "sorted_i32": pa.array(np.sort(rng.integers(0, 100, n)).astype(np.int32)),
        "sorted_i64": pa.array(np.sort(rng.integers(0, 1000, n)) * 1_000_003),
        "sorted_str": pa.array(np.sort(rng.choice(cats, n)).tolist()),
    })
    hosts = [f"www.{w}{i}.com" for i, w in enumerate(_WORDS)]
    ids = rng.integers(0, 10**7, n)
    host = rng.integers(0, len(hosts), n)
    words = rng.integers(0, len(_WORDS), (n, 2))
    t["text"] = pa.table({
        "url": pa.array([f"https://{hosts[h]}/{_WORDS[a]}/{_WORDS[b]}?id={i}"
                         for h, a, b, i in zip(host.tolist(), words[:, 0].tolist(),
                                               words[:, 1].tolist(), ids.tolist())]),
        "email": pa.array([f"{_WORDS[a]}.{_WORDS[b]}{i % 1000}@{hosts[h][4:]}"
                           for h, a, b, i in zip(host.tolist(), words[:, 1].tolist(),
                                                 words[:, 0].tolist(), ids.tolist())]),
    })
    t["lowcard_str"] = pa.table({
        "category": pa.array(rng.choice(cats, n).tolist()),
        "country2": pa.array(rng.choice(np.array(["US", "DE", "FR", "JP", "CN", "BR", "IN",
                                                  "GB"], dtype=object), n).tolist()),
        "flag1": pa.array(rng.choice(np.array(["A", "N", "R"], dtype=object), n).tolist()),
    })
    orders = np.repeat(np.arange(1, n + 1, dtype=np.int64) * 4, rng.integers(1, 8, n))[:n]
    linenumber = np.zeros(n, np.int32)
    starts = np.flatnonzero(np.r_[True, orders[1:] != orders[:-1]])
    linenumber[:] = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n])) + 1
    qty = rng.integers(1, 51, n)
    price = np.round(qty * rng.uniform(900, 2000, n), 2)
    ship = 8000 + rng.integers(0, 2500, n)
    t["lineitem"] = pa.table({
        "l_orderkey": pa.array(orders),
        "l_partkey": pa.array(rng.integers(1, 200_001, n)),
        "l_suppkey": pa.array(rng.integers(1, 10_001, n)),
        "l_linenumber": pa.array(linenumber),
        "l_quantity": pa.array(qty).cast(pa.decimal128(38, 0)).cast(pa.decimal128(15, 2)),
        "l_extendedprice": pa.array(price).cast(pa.decimal128(15, 2)),
        "l_discount": pa.array(rng.integers(0, 11, n) / 100.0),
        "l_tax": pa.array(rng.integers(0, 9, n) / 100.0),
        "l_returnflag": pa.array(rng.choice(np.array(["A", "N", "R"], dtype=object), n).tolist()),
        "l_linestatus": pa.array(rng.choice(np.array(["O", "F"], dtype=object), n).tolist()),
        "l_shipdate": pa.array(ship.astype(np.int32), pa.date32()),
        "l_commitdate": pa.array((ship + rng.integers(-60, 60, n)).astype(np.int32), pa.date32()),
        "l_receiptdate": pa.array((ship + rng.integers(1, 30, n)).astype(np.int32),
                                  pa.date32()),
        "l_shipinstruct": pa.array(rng.choice(np.array(
            ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"], dtype=object),
            n).tolist()),
        "l_shipmode": pa.array(rng.choice(np.array(
            ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"], dtype=object),
            n).tolist()),
        "l_comment": pa.array(_text(rng, n, 2, 6)),
    })
    return t


def column_sizes(path) -> list[tuple[int, str]]:
    from lancenb.file import LanceFileReader

    md = LanceFileReader(path).metadata()
    return [(sum(b.size for pg in c.pages for b in pg.buffers),
             c.pages[0].description if c.pages else "-") for c in md.columns]


def parquet_sizes(path, ncols) -> list[int]:
    md = pq.ParquetFile(path).metadata
    out = [0] * ncols
    for rg in range(md.num_row_groups):
        for c in range(md.num_columns):
            out[c] += md.row_group(rg).column(c).total_compressed_size
    return out


def timed(fns, repeat):
    """Median time of each of ``fns`` after a warm-up, the functions timed in turn
    within every repetition so that a busy machine slows them alike."""
    for fn in fns:
        fn()
    ts = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            ts[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in ts]


def bench(tables, tmp, repeat):
    import lance.file as plf

    import lancenb.file as nlf

    rows = []
    for tname, table in tables.items():
        p_nb = os.path.join(tmp, f"{tname}.nb.lance")
        p_cp = os.path.join(tmp, f"{tname}.compact.lance")
        p_py = os.path.join(tmp, f"{tname}.py.lance")
        p_pq = os.path.join(tmp, f"{tname}.parquet")
        with nlf.LanceFileWriter(p_nb, table.schema, version="2.1") as w:
            w.write_batch(table)
        t0 = time.perf_counter()
        with nlf.LanceFileWriter(p_cp, table.schema, version="2.1", compression="compact") as w:
            w.write_batch(table)
        write_cp = time.perf_counter() - t0
        w = plf.LanceFileWriter(p_py, table.schema, version="2.1")
        w.write_batch(table)
        w.close()
        pq.write_table(table, p_pq, compression="zstd")
        exact = all(plf.LanceFileReader(p).read_all().to_table().equals(table)
                    for p in (p_nb, p_cp))
        s_nb, s_cp, s_py = column_sizes(p_nb), column_sizes(p_cp), column_sizes(p_py)
        s_pq = parquet_sizes(p_pq, table.num_columns)
        for i, col in enumerate(table.column_names):
            t_nb, t_py, t_cp = timed(
                [lambda c=col, p=p_nb: nlf.LanceFileReader(p, columns=[c]).read_all().to_table(),
                 lambda c=col, p=p_py: plf.LanceFileReader(p, columns=[c]).read_all().to_table(),
                 lambda c=col, p=p_cp: nlf.LanceFileReader(p, columns=[c]).read_all()
                 .to_table()], repeat)
            rows.append(dict(table=tname, column=col, type=str(table.schema.field(col).type),
                             nb=s_nb[i][0], py=s_py[i][0], cp=s_cp[i][0], pq=s_pq[i],
                             enc_nb=s_nb[i][1], enc_cp=s_cp[i][1], t_nb=t_nb, t_py=t_py,
                             t_cp=t_cp, exact=exact, write_cp=write_cp))
            print(f"{tname}.{col}: nb {s_nb[i][0]} py {s_py[i][0]} compact {s_cp[i][0]} "
                  f"pq {s_pq[i]} scan {t_nb * 1e3:.2f}/{t_py * 1e3:.2f}/{t_cp * 1e3:.2f} ms",
                  file=sys.stderr)
    return rows


def render(rows, n, repeat, elapsed) -> str:
    import lance

    import lancenb

    def kb(b):
        return f"{b / 1024:,.1f}"

    out = ["## Per-column sizes and scans on the issue-3 tables (`benchmarks/bench_tables.py`)",
           "",
           f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed:.0f} s; "
           f"{n:,} rows per table; scans are one-column `LanceFileReader(path, "
           f"columns=[c]).read_all().to_table()`, median of {repeat} after a warm-up, the "
           f"three readers timed in turn in each repetition. "
           f"Sizes are the column's page buffers in KiB (Parquet: the column chunk, "
           f"zstd, pyarrow defaults). lancenb {lancenb.__version__}, pylance "
           f"{getattr(lance, '__version__', '?')}, pyarrow {pa.__version__}, Python "
           f"{platform.python_version()}. *default/pylance* and *compact/Parquet* are "
           f"size ratios (<= 1 is the target); *scan* is lancenb/pylance time on the "
           f"default files, *scan compact* the compact file read by lancenb / pylance on "
           f"its own file.",
           "",
           "| table.column | type | lancenb 2.1 | pylance 2.1 | default/pylance | compact "
           "| Parquet zstd | compact/Parquet | compact encoding | scan | scan compact |",
           "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['table']}.{r['column']} | {r['type']} | {kb(r['nb'])} | "
                   f"{kb(r['py'])} | {r['nb'] / max(r['py'], 1):.3f} | {kb(r['cp'])} | "
                   f"{kb(r['pq'])} | {r['cp'] / max(r['pq'], 1):.3f} | `{r['enc_cp']}` | "
                   f"{r['t_nb'] / r['t_py']:.2f} | {r['t_cp'] / r['t_py']:.2f} |")
    tot = {k: sum(r[k] for r in rows) for k in ("nb", "py", "cp", "pq")}
    out.append(f"| **all columns** | | {kb(tot['nb'])} | {kb(tot['py'])} | "
               f"{tot['nb'] / tot['py']:.3f} | {kb(tot['cp'])} | {kb(tot['pq'])} | "
               f"{tot['cp'] / tot['pq']:.3f} | | | |")
    writes = {r["table"]: r["write_cp"] for r in rows}
    larger = [f"{r['table']}.{r['column']}" for r in rows if r["nb"] > r["py"]]
    over_pq = [f"{r['table']}.{r['column']} ({r['cp'] / r['pq']:.2f})" for r in rows
               if r["cp"] > r["pq"]]
    slow = [f"{r['table']}.{r['column']} ({r['t_nb'] / r['t_py']:.2f})" for r in rows
            if r["t_nb"] > r["t_py"]]
    out += ["",
            f"- pylance reads every lancenb file (default and compact) exactly: "
            f"{'yes' if all(r['exact'] for r in rows) else '**no**'}",
            f"- default columns larger than pylance's: {', '.join(larger) or 'none'}",
            f"- compact columns larger than Parquet's: {', '.join(over_pq) or 'none'}",
            f"- default scans slower than pylance's: {', '.join(slow) or 'none'}",
            "- compact write time per table (s): "
            + ", ".join(f"{t} {w:.1f}" for t, w in writes.items()),
            ""]
    return "\n".join(out) + "\n"


def write_out(path, report):
    replace_section(path, f"{MARK_START}\n{report}{MARK_END}", MARK_START, MARK_END)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None, help="RESULTS.md to update")
    args = ap.parse_args(argv)
    t0 = time.time()
    tables = make_tables(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        rows = bench(tables, tmp, args.repeat)
    report = render(rows, args.rows, args.repeat, time.time() - t0)
    print(report)
    if args.out:
        write_out(args.out, report)


if __name__ == "__main__":
    main()
