"""The ``lancenb`` command line. ``lancenb demo`` is what ``make demo`` runs."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

__all__ = ["main"]


def _sample_table(n: int, seed: int = 42):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    cats = np.array(["books", "games", "music", "garden", "toys", "tools"])
    words = np.array(["lance", "numba", "arrow", "column", "page", "chunk", "fast", "file"])
    text = [" ".join(words[rng.integers(0, len(words), int(k))]) for k in rng.integers(1, 8, n)]
    price = np.round(rng.gamma(2.0, 20.0, n), 2)
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "ts": pa.array(1_700_000_000_000_000 + np.cumsum(rng.integers(0, 10**6, n)),
                       pa.timestamp("us", "UTC")),
        "category": pa.array(cats[rng.integers(0, len(cats), n)]),
        "text": pa.array(text),
        "price": pa.array(price, mask=rng.random(n) < 0.05),
        "in_stock": pa.array(rng.random(n) < 0.8),
    })


def demo(rows: int = 200_000, out_dir: str | None = None) -> int:
    """Write a generated table to a Lance file, read it back, take rows, show sizes."""
    import numpy as np

    from lancenb.file import LanceFileReader, LanceFileWriter

    table = _sample_table(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(out_dir or tmp, "demo.lance")
        t0 = time.perf_counter()
        with LanceFileWriter(path, table.schema) as w:
            w.write_batch(table)
        t1 = time.perf_counter()
        reader = LanceFileReader(path)
        back = reader.read_all().to_table()
        t2 = time.perf_counter()
        idx = np.sort(np.random.default_rng(0).choice(rows, 5, replace=False))
        taken = reader.take_rows(idx).to_table()
        t3 = time.perf_counter()
        ok = back.equals(table) and taken.equals(table.take(idx))
        print(f"lancenb demo: {rows:,} rows, {table.num_columns} columns -> {path}")
        print(f"  file size  {os.path.getsize(path):>12,} bytes (Arrow in memory: "
              f"{table.nbytes:,})")
        print(f"  write      {1000 * (t1 - t0):9.1f} ms")
        print(f"  read all   {1000 * (t2 - t1):9.1f} ms   round trip exact: {ok}")
        print(f"  take 5     {1000 * (t3 - t2):9.1f} ms   rows {idx.tolist()}")
        print("  per column (pages, bytes on disk, encoding):")
        md = reader.metadata()
        for field, col in zip(table.schema, md.columns):
            size = sum(b.size for p in col.pages for b in p.buffers)
            kinds = sorted({p.encoding for p in col.pages})
            print(f"    {field.name:<10} {str(field.type):<22} {len(col.pages):>3} {size:>12,}  "
                  f"{', '.join(kinds)}")
        print(taken.to_pandas().to_string(index=False) if _has_pandas() else taken)
        return 0 if ok else 1


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head and friends
        sys.stderr.close()
        return 0


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="lancenb", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_demo = sub.add_parser("demo", help="write, read and take from a generated sample table")
    p_demo.add_argument("--rows", type=int, default=200_000)
    p_demo.add_argument("--out-dir", default=None, help="keep the file in this directory")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.rows, args.out_dir)
    return 2


if __name__ == "__main__":
    sys.exit(main())
