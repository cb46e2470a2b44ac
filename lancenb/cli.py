"""The ``lancenb`` command line: inspect, validate, convert, demo.

``lancenb demo`` is what ``make demo`` runs. See docs/cli.md for real output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from lancenb.errors import InvalidInputError, LanceError
from lancenb.progress import progress_bar

__all__ = ["main"]


CATEGORIES = ["books", "games", "music", "garden", "toys", "tools", "kitchen", "sports"]
WORDS = ["lance", "numba", "arrow", "column", "page", "chunk", "fast", "file", "spark",
         "vector", "fragment", "version", "random", "access", "scan", "table"]
EMBEDDING_DIM = 16


def _sample_table(n: int, *, start: int = 0, seed: int = 42):
    """Realistic-looking orders: ids, timestamps, categories, text, prices with nulls,
    a 16-dim float32 embedding (a vector column) and a list of tags."""
    import numpy as np  # lazy: CLI start-up
    import pyarrow as pa  # lazy: CLI start-up

    rng = np.random.default_rng(seed + start)
    cats = np.array(CATEGORIES)
    words = np.array(WORDS)
    nwords = rng.integers(2, 12, n)
    flat = words[rng.integers(0, len(words), int(nwords.sum()))]
    bounds = np.concatenate([[0], np.cumsum(nwords)])
    text = [" ".join(flat[bounds[i]:bounds[i + 1]]) for i in range(n)]
    ntags = rng.integers(0, 4, n)
    tag_vals = cats[rng.integers(0, len(cats), int(ntags.sum()))]
    tags = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(ntags)]),
                                             pa.int32()), pa.array(tag_vals))
    emb = rng.standard_normal((n, EMBEDDING_DIM)).astype(np.float32)
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "user_id": pa.array(rng.zipf(1.5, n) % 50_000, pa.int32()),
        "ts": pa.array(1_700_000_000_000_000 + (start + np.arange(n)) * 1_000_000 // 3
                       + rng.integers(0, 300_000, n), pa.timestamp("us", "UTC")),
        "category": pa.array(cats[rng.integers(0, len(cats), n)]),
        "text": pa.array(text),
        "price": pa.array(np.round(rng.gamma(2.0, 20.0, n), 2), mask=rng.random(n) < 0.05),
        "in_stock": pa.array(rng.random(n) < 0.8),
        "embedding": pa.FixedSizeListArray.from_arrays(pa.array(emb.reshape(-1)),
                                                       EMBEDDING_DIM),
        "tags": tags,
    })


def _leaf_counts(schema) -> list[int]:
    from lancenb.encodings.structural.repdef import leaf_paths  # lazy: numba, start-up

    return [len(leaf_paths(f.type)) for f in schema]


def _lance_columns(ds) -> dict:
    """Per top-level column: bytes on disk and the encodings of its pages."""
    from lancenb.file import LanceFileReader  # lazy: numba, start-up

    out = {name: [0, {}] for name in ds.schema.names}
    for frag in ds.get_fragments():
        for df in frag.data_files():
            r = LanceFileReader(ds.snapshot.store.uri_of(f"data/{df.path}"))
            cols = r.metadata().columns
            i = 0
            for f, k in zip(r.schema, _leaf_counts(r.schema)):
                for c in cols[i:i + k]:
                    for p in c.pages:
                        out[f.name][0] += sum(b.size for b in p.buffers)
                        out[f.name][1][p.encoding] = out[f.name][1].get(p.encoding, 0) + 1
                i += k
    return out


def _parquet_columns(path: str) -> dict:
    import pyarrow.parquet as pq  # lazy: CLI start-up

    out: dict[str, int] = {}
    for root, _, files in os.walk(path):
        for name in files:
            if not name.endswith(".parquet"):
                continue
            md = pq.ParquetFile(os.path.join(root, name)).metadata
            for g in range(md.num_row_groups):
                rg = md.row_group(g)
                for j in range(rg.num_columns):
                    col = rg.column(j)
                    top = col.path_in_schema.split(".")[0]
                    out[top] = out.get(top, 0) + col.total_compressed_size
    return out


def _dir_size(path: str, sub: str = "") -> int:
    total = 0
    for root, _, files in os.walk(os.path.join(path, sub)):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


# the demo's JVM: a short job on a small machine, where the optimising JIT compiler (C2)
# spends more CPU compiling than its code saves; the client compiler alone halves the CPU
# of starting Spark (measured in benchmarks/RESULTS.md). Only here, never in
# local_session's defaults: long jobs want C2.
DEMO_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def demo(rows: int = 200_000, out_dir: str | None = None, *,
         jvm_options: str = DEMO_JVM_OPTIONS) -> int:
    """The main job: Spark writes a Lance dataset, appends, lancenb deletes, Spark and
    the Python API read it back; prints rows, versions, encodings and sizes.

    ``jvm_options`` go to the driver JVM (and to Spark's launcher JVM through
    ``SPARK_LAUNCHER_OPTS``, unless that is set); ``""`` for the JVM's defaults."""
    import numpy as np  # lazy: CLI start-up

    import lancenb.spark as ls  # lazy: pyspark
    from lancenb.dataset import dataset as open_dataset  # lazy: numba, start-up

    with tempfile.TemporaryDirectory() as tmp:
        base = out_dir or tmp
        uri = os.path.join(base, "orders.lance")
        pq_path = os.path.join(base, "orders.parquet")
        clock = time.perf_counter()

        def step(msg):
            nonlocal clock
            now = time.perf_counter()
            print(f"  {msg:<58} {now - clock:7.2f} s")
            clock = now

        print(f"lancenb demo: {rows:,} + {rows // 4:,} generated orders through embedded Spark")
        conf = {}
        if jvm_options:
            conf["spark.driver.extraJavaOptions"] = jvm_options
            os.environ.setdefault("SPARK_LAUNCHER_OPTS", jvm_options)
        spark = ls.local_session("local[2]", app_name="lancenb-demo", conf=conf)
        step(f"started Spark {spark.version} (local[2]" +
             (f", JVM {jvm_options})" if jvm_options else ")"))
        from pyspark.sql import functions as F  # lazy: pyspark

        def frame(n, start):
            df = spark.createDataFrame(_sample_table(n, start=start))
            # Spark has no fixed-size lists: lance-spark's metadata key keeps the vector
            return df.withColumn("embedding", F.col("embedding").alias(
                "embedding", metadata={"arrow.fixed-size-list.size": EMBEDDING_DIM}))

        first, second = frame(rows, 0), frame(rows // 4, rows)
        t_first = time.perf_counter()
        first.write.format("lancenb").mode("append").option("write_mode", "create") \
            .option("max_rows_per_file", 100_000).save(uri)
        t_first = time.perf_counter() - t_first
        step("version 1: Spark wrote the first batch")
        second.write.format("lancenb").mode("append").save(uri)
        step("version 2: Spark appended a second batch")
        ds = open_dataset(uri)
        ds.delete("category = 'toys' AND price > 80")
        step("version 3: lancenb deleted toys above 80")
        # Spark's own first write of the same rows, for comparison with version 1
        t_pq = time.perf_counter()
        first.write.mode("overwrite").parquet(pq_path)
        t_pq = time.perf_counter() - t_pq
        step("Spark wrote the first batch as Parquet")
        second.write.mode("append").parquet(pq_path)
        step("Spark appended the second batch as Parquet (for sizes)")

        df = spark.read.format("lancenb").load(uri)
        n_spark = df.count()
        by_cat = (df.filter(F.col("price").isNotNull()).groupBy("category")
                  .agg(F.count("*").alias("orders"), F.round(F.avg("price"), 2)
                       .alias("avg_price")).orderBy("category").collect())
        recent = df.filter("ts >= TIMESTAMP'1970-01-01' AND category = 'books' "
                           "AND in_stock").count()
        step("Spark read it back (count, group by, pushed-down filter)")
        ds = open_dataset(uri)
        n_py = ds.count_rows()
        table = ds.to_table(columns=["id", "category", "price"])
        step("the Python API read it back")
        idx = np.sort(np.random.default_rng(7).choice(n_py, 5, replace=False))
        taken = ds.take(idx, columns=["id", "ts", "category", "text", "price", "tags"])
        step("took 5 random rows")
        v1_spark = spark.read.format("lancenb").option("version", 1).load(uri).count()
        deleted = ds.checkout_version(2).count_rows() - n_py

        ok = n_spark == n_py == table.num_rows and v1_spark == rows
        print(f"\nfirst write of {rows:,} rows: lancenb {t_first:.2f} s, Spark's Parquet "
              f"{t_pq:.2f} s ({t_first / max(t_pq, 1e-9):.2f}x)")
        print(f"rows: Spark {n_spark:,}, Python API {n_py:,} (deleted {deleted:,}); "
              f"version 1 through Spark: {v1_spark:,}; books in stock: {recent:,}")
        print("\nversions:")
        for v in ds.versions():
            md = v["metadata"]
            print(f"  {v['version']:>2}  {v['timestamp']:%Y-%m-%d %H:%M:%S}  "
                  f"rows {int(md['total_rows']):>9,}  fragments {md['total_fragments']:>3}  "
                  f"deleted {int(md['total_deletion_file_rows']):>7,}")
        print("\norders by category (Spark):")
        for r in by_cat:
            print(f"  {r['category']:<8} {r['orders']:>8,}  avg price {r['avg_price']:>7}")
        print("\n5 random rows (LanceDataset.take):")
        if _has_pandas():
            import pandas as pd  # lazy: pandas is optional and heavy

            with pd.option_context("display.width", 120, "display.max_colwidth", 40):
                print(taken.to_pandas().to_string(index=False))
        else:
            print(taken)
        lance_cols = _lance_columns(ds)
        pq_cols = _parquet_columns(pq_path)
        print("\nper column: Lance bytes (encodings chosen, pages) vs Parquet (Spark, snappy)")
        for name, (size, encs) in lance_cols.items():
            enc = ", ".join(f"{e} x{k}" for e, k in sorted(encs.items(), key=lambda x: -x[1]))
            enc = enc if len(enc) <= 70 else enc[:67] + "..."
            print(f"  {name:<10} {size:>12,}  {pq_cols.get(name, 0):>12,}  {enc}")
        lance_total = _dir_size(uri, "data")
        pq_total = _dir_size(pq_path)
        print(f"  {'total':<10} {lance_total:>12,}  {pq_total:>12,}  (data files; Lance/Parquet "
              f"= {lance_total / max(1, pq_total):.2f})")
        print(f"\ndataset: {uri}" + ("" if out_dir else " (temporary)"))
        print("demo " + ("OK" if ok else "FAILED: Spark and the Python API disagree"))
        spark.stop()
        return 0 if ok else 1


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    """Run the ``lancenb`` command line with ``argv`` (default ``sys.argv[1:]``).

    Commands: ``inspect``, ``validate``, ``convert``, ``compact``, ``demo``, ``warmup``
    (``lancenb --help``). A refused input or a problem found prints one line, never a
    traceback.

    Returns
    -------
    int
        The exit status: 0 on success, 1 when an input is refused or ``validate`` finds a
        problem (argparse exits with 2 on a usage error).

    Examples
    --------
    >>> from lancenb.cli import main
    >>> main(["validate", "orders.lance"])  # doctest: +SKIP
    validated dataset orders.lance: 2 manifests, 2 data files, 8 pages, 0 deletion files
    0
    """
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head and friends
        sys.stderr.close()
        return 0


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="lancenb", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_ins = sub.add_parser("inspect", help="what a Lance file or dataset holds: versions, "
                                           "fragments, columns, pages, encodings and why")
    p_ins.add_argument("path", help="a .lance file or a dataset directory/URI")
    p_ins.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_ins.add_argument("--version", type=int, default=None, help="dataset version to detail")
    p_ins.add_argument("--files", action="store_true",
                       help="datasets: also inspect every data file")
    p_ins.add_argument("--no-explain", action="store_true",
                       help="files: do not decode pages to explain the encodings")
    p_val = sub.add_parser("validate", help="decode every page and deletion file; report "
                                            "every problem (exit status 1 if any)")
    p_val.add_argument("uri")
    p_val.add_argument("--json", action="store_true")
    p_conv = sub.add_parser("convert", help="Parquet, CSV, Arrow IPC or Lance in; a Lance "
                                            "dataset (or .parquet) out, streamed")
    p_conv.add_argument("src")
    p_conv.add_argument("dst")
    p_conv.add_argument("--mode", choices=["create", "append", "overwrite"], default="create")
    p_conv.add_argument("--max-rows-per-file", type=int, default=None)
    p_conv.add_argument("--data-storage-version", default=None,
                        help="file format of the data files: 2.2 (default, as pylance "
                             "14), 2.1 or 2.0")
    p_conv.add_argument("--batch-rows", type=int, default=65536,
                        help="rows read from the source at a time")
    p_conv.add_argument("--format", choices=["parquet", "csv", "ipc", "lance"], default=None,
                        help="source format (default: from the name)")
    p_conv.add_argument("--quiet", action="store_true", help="no progress lines")
    p_comp = sub.add_parser("compact", help="merge small fragments and drop deleted rows "
                                            "(ds.optimize.compact_files), with a progress bar")
    p_comp.add_argument("uri")
    p_comp.add_argument("--target-rows-per-fragment", type=int, default=1024 * 1024)
    p_comp.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p_demo = sub.add_parser("demo", help="Spark writes, appends and reads a generated dataset; "
                                         "lancenb deletes, takes and shows encodings")
    p_demo.add_argument("--rows", type=int, default=200_000)
    p_demo.add_argument("--out-dir", default=None, help="keep the dataset in this directory")
    p_demo.add_argument("--jvm-options", default=DEMO_JVM_OPTIONS,
                        help="Java options of the demo's Spark driver ('' for the JVM's "
                             f"defaults; default {DEMO_JVM_OPTIONS})")
    p_warm = sub.add_parser("warmup", help="compile every kernel into the Numba cache now "
                                           "(once per machine or image), in parallel")
    p_warm.add_argument("--processes", type=int, default=None,
                        help="worker processes (default: the number of CPUs)")
    p_warm.add_argument("--quiet", action="store_true", help="no progress line")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.rows, args.out_dir, jvm_options=args.jvm_options)
    try:
        if args.command == "inspect":
            return _cmd_inspect(args)
        if args.command == "validate":
            return _cmd_validate(args)
        if args.command == "convert":
            return _cmd_convert(args)
        if args.command == "warmup":
            return _cmd_warmup(args)
        if args.command == "compact":
            return _cmd_compact(args)
    except LanceError as e:
        print(f"lancenb {args.command}: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # inspect/validate read anything: one line, never a traceback
        if args.command not in ("inspect", "validate"):
            raise
        print(f"lancenb {args.command}: unexpected {type(e).__name__}: {_one_line(e)}",
              file=sys.stderr)
        return 1
    return 2


def _one_line(e: BaseException, limit: int = 400) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit] + "..."


# -- inspect ---------------------------------------------------------------------------
def _cmd_warmup(args) -> int:
    from lancenb.warmup import warmup  # lazy: numba, CLI start-up

    r = warmup(processes=args.processes, progress=False if args.quiet else None)
    where = r.cache_dir or "nowhere (no writable cache directory: set NUMBA_CACHE_DIR)"
    print(f"lancenb warmup: {r.tasks} workloads, {r.compiled} kernel specialisations "
          f"compiled ({r.filled} more in the check pass) in {r.seconds:.1f} s; "
          f"cache: {where}")
    return 0 if r.cache_dir else 1


def _table(rows: list[list], header: list[str], indent: str = "  ") -> None:
    """Print rows as aligned columns (numbers right-aligned)."""
    cells = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    num = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
           for i in range(len(header))]
    fmt = lambda r: indent + "  ".join(  # noqa: E731
        (c.rjust(w) if n else c.ljust(w)) for c, w, n in zip(r, widths, num)).rstrip()
    print(fmt(header))
    for r in cells:
        print(fmt(r))


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _yes(b) -> str:
    return "yes" if b else "no"


def _print_file(r: dict, explain: bool) -> None:
    print(f"file {r['path']}")
    print(f"  Lance {r['version']}, {r['size_bytes']:,} bytes, {r.get('num_rows', 0):,} rows, "
          f"{len(r.get('columns', []))} columns; readable by lancenb: "
          f"{_yes(r['readable_by']['lancenb'])}, pylance 14: "
          f"{_yes(r['readable_by']['pylance14'])}")
    f = r.get("footer", {})
    if "column_meta_offsets_position" in f:
        print(f"  footer: column metadata at {f['column_meta_start']:,}, column table at "
              f"{f['column_meta_offsets_position']:,}, global buffer table at "
              f"{f['global_buffer_offsets_position']:,} ({f['num_global_buffers']} global "
              f"buffers)")
    elif f:
        print(f"  footer: metadata at {f['metadata_position']:,}; batches "
              f"{r.get('batch_offsets')}")
    for note in r.get("notes", []):
        print(f"  note: {note}")
    schema = r.get("schema", {})
    print("\nschema")
    _table([[x["id"], x["parent_id"], x["name"], x["logical_type"], x["nullable"],
             ", ".join(f"{k}={v}" for k, v in x["metadata"].items()) or None]
            for x in schema.get("fields", [])],
           ["id", "parent", "name", "type", "nullable", "metadata"])
    print("\npages")
    rows = []
    for c in r.get("columns", []):
        for p in c["pages"]:
            e = p.get("explanation") or {}
            rows.append([c["name"], p["index"], p["rows"], p.get("bytes"),
                         p.get("uncompressed_bytes"), p.get("layout"), p.get("chunks"),
                         p.get("dictionary_bytes"), p.get("repetition_index_bytes"),
                         None if "reproduced" not in e else e["reproduced"],
                         p.get("description")])
    _table(rows, ["column", "page", "rows", "bytes", "raw", "layout", "chunks", "dict",
                  "rep-idx", "same", "encoding"])
    if not explain:
        return
    shown = False
    for c in r.get("columns", []):
        for p in c["pages"]:
            e = p.get("explanation")
            if not e or "steps" not in e:
                continue
            if not shown:
                print("\nwhy (lancenb's strategy re-run on each decoded page; 'same' = it "
                      "chose the stored encoding)")
                shown = True
            st = e.get("stats", {})
            print(f"  {c['name']} page {p['index']}: "
                  + ", ".join(f"{k} {_cell(v)}" for k, v in st.items() if k != "nested_levels"))
            if e.get("overrides"):
                print("    metadata: " + ", ".join(f"{k}={v}" for k, v in
                                                   e["overrides"].items()))
            for step in e["steps"]:
                print(f"    {step}")


def _print_dataset(r: dict) -> None:
    ff = r["feature_flags"]
    print(f"dataset {r['uri']}")
    print(f"  version {r['version']} of {r['latest_version']}, {r['rows']:,} rows in "
          f"{len(r['fragments'])} fragments, {r['data_bytes']:,} data bytes; data storage "
          f"version {r['data_storage_version']}, files {', '.join(r['file_versions']) or '-'}; "
          f"{r['manifest_naming']} manifest names")
    print(f"  feature flags: reader {ff['reader']} {ff['reader_names'] or ''}, writer "
          f"{ff['writer']} {ff['writer_names'] or ''}")
    print(f"  readable by lancenb: {_yes(r['readable_by']['lancenb'])}, pylance 14: "
          f"{_yes(r['readable_by']['pylance14'])}")
    print("\nversions")
    _table([[v["version"], v.get("timestamp"), v.get("operation"), v.get("writer"),
             v.get("fragments"), v.get("rows"), v.get("tag") or v.get("error")]
            for v in r["versions"]],
           ["version", "timestamp (UTC)", "operation", "writer", "fragments", "rows", "tag"])
    print("\nfragments")
    _table([[f["id"], f["rows"], f["physical_rows"], f["deleted_rows"],
             (f.get("deletion_file") or {}).get("type"), d["path"], d["file_version"],
             d["size_bytes"], ",".join(map(str, d["fields"]))]
            for f in r["fragments"] for d in f["files"]],
           ["id", "rows", "physical", "deleted", "deletions", "data file", "format", "bytes",
            "fields"])
    print("\nschema")
    _table([[x["id"], x["parent_id"], x["name"], x["logical_type"], x["nullable"],
             ", ".join(f"{k}={v}" for k, v in x["metadata"].items()) or None]
            for x in r["schema"]["fields"]],
           ["id", "parent", "name", "type", "nullable", "metadata"])
    if r["tags"]:
        print("\ntags")
        _table([[k, v.get("version"), v.get("manifestSize")] for k, v in r["tags"].items()],
               ["tag", "version", "manifest bytes"])
    for f in r["fragments"]:
        for d in f["files"]:
            if "inspect" in d:
                print()
                if "error" in d["inspect"]:
                    print(f"file {d['path']}: {d['inspect']['error']}")
                else:
                    _print_file(d["inspect"], False)


def _cmd_inspect(args) -> int:

    from lancenb.inspect import inspect  # lazy: loads the dataset layer

    r = inspect(args.path, version=args.version, files=args.files,
                explain=not args.no_explain)
    if args.json:
        print(json.dumps(r, indent=1))
    elif r["kind"] == "dataset":
        _print_dataset(r)
    else:
        _print_file(r, not args.no_explain)
    return 0


# -- validate --------------------------------------------------------------------------
def _cmd_validate(args) -> int:

    from lancenb.inspect import validate  # lazy: loads the dataset layer

    r = validate(args.uri)
    if args.json:
        print(json.dumps(r, indent=1))
    else:
        c = r["checked"]
        print(f"validated {r['kind']} {r['uri']}: {c['manifests']} manifests, {c['files']} "
              f"data files, {c['pages']} pages, {c['deletion_files']} deletion files")
        for n in r["not_decoded"]:
            print(f"  not decoded (container checked only): {n}")
        for p in r["problems"]:
            where = ", ".join(f"{k} {p[k]}" for k in ("column", "page", "offset")
                              if p[k] is not None)
            print(f"PROBLEM {p['file']}" + (f" [{where}]" if where else "")
                  + (" (unexpected error)" if p["unexpected"] else ""))
            print(f"    {p['message']}")
        print("OK" if r["ok"] else f"{len(r['problems'])} problem(s)")
    return 0 if r["ok"] else 1


# -- convert ---------------------------------------------------------------------------
def _source(src: str, fmt: str | None, batch_rows: int):
    """``(RecordBatchReader, total rows or None)`` streaming the source."""
    import pyarrow as pa  # lazy: CLI start-up

    if fmt is None:
        low = src.rstrip("/").lower()
        if os.path.isdir(os.path.join(src, "_versions")) or low.endswith(".lance"):
            fmt = "lance"
        elif low.endswith((".parquet", ".pq")) or os.path.isdir(src):
            fmt = "parquet"
        elif low.endswith((".csv", ".csv.gz", ".tsv")):
            fmt = "csv"
        elif low.endswith((".arrow", ".ipc", ".feather", ".arrows")):
            fmt = "ipc"
        else:
            raise InvalidInputError(f"cannot tell the format of {src!r}; pass --format")
    if fmt == "lance":
        from lancenb.dataset import dataset as open_dataset  # lazy: numba, start-up

        ds = open_dataset(src)
        return (pa.RecordBatchReader.from_batches(
            ds.schema, ds.to_batches(batch_size=batch_rows)), ds.count_rows())
    if fmt == "parquet":
        import pyarrow.parquet as pq  # lazy: CLI start-up

        if os.path.isdir(src):
            import pyarrow.dataset as pads  # lazy: loads pandas

            d = pads.dataset(src, format="parquet")
            return (pa.RecordBatchReader.from_batches(d.schema, d.to_batches(
                batch_size=batch_rows, batch_readahead=1, fragment_readahead=1,
                fragment_scan_options=pads.ParquetFragmentScanOptions(pre_buffer=False))),
                d.count_rows())
        # pre_buffer=False: with pre-buffering, pyarrow keeps every row group's column
        # chunks it has read until the file is closed, so memory grew with the input
        f = pq.ParquetFile(src, pre_buffer=False)
        return (pa.RecordBatchReader.from_batches(f.schema_arrow, f.iter_batches(
            batch_size=batch_rows)), f.metadata.num_rows)
    if fmt == "csv":
        import pyarrow.csv as pcsv  # lazy: CLI start-up

        return pcsv.open_csv(src, read_options=pcsv.ReadOptions(block_size=16 << 20)), None
    import pyarrow.ipc as ipc  # lazy: CLI start-up

    try:
        f = ipc.open_file(src)
        return pa.RecordBatchReader.from_batches(
            f.schema, (f.get_batch(i) for i in range(f.num_record_batches))), None
    except pa.ArrowInvalid:
        return ipc.open_stream(src), None


class _Progress:
    """Counts batches going by: a progress bar when stderr is a terminal
    (:mod:`lancenb.progress`), else a line to stderr every ``every`` seconds."""

    def __init__(self, total: int | None, quiet: bool, every: float = 2.0):
        self.total, self.quiet, self.every = total, quiet, every
        self.rows = self.bytes = 0
        self.start = self.last = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.bar = progress_bar("converting", total, enabled=self.tty and not quiet)

    def wrap(self, reader):
        import pyarrow as pa  # lazy: CLI start-up

        def gen():
            for b in reader:
                self.rows += b.num_rows
                self.bytes += b.nbytes
                self.bar.update(b.num_rows)
                now = time.perf_counter()
                if not self.tty and now - self.last >= self.every:
                    self.last = now
                    self.line()
                yield b

        return pa.RecordBatchReader.from_batches(reader.schema, gen())

    def line(self, final: bool = False) -> None:
        if final:
            self.bar.close()
        if self.quiet:
            return
        dt = max(1e-9, time.perf_counter() - self.start)
        pct = f" ({100 * self.rows / self.total:.0f}%)" if self.total else ""
        print(f"{'converted' if final else 'converting'}: {self.rows:,} rows{pct}, "
              f"{self.bytes / 1e6:,.0f} MB in memory form, {dt:.1f} s, "
              f"{self.bytes / 1e6 / dt:,.0f} MB/s", file=sys.stderr, flush=True)


def _cmd_convert(args) -> int:
    src, total = _source(args.src, args.format, args.batch_rows)
    prog = _Progress(total, args.quiet)
    reader = prog.wrap(src)
    if args.dst.lower().endswith(".parquet"):
        import pyarrow.parquet as pq  # lazy: CLI start-up

        with pq.ParquetWriter(args.dst, reader.schema) as w:
            for b in reader:
                w.write_batch(b)
    else:
        from lancenb.dataset import write_dataset  # lazy: numba, start-up

        opts = {"mode": args.mode, "data_storage_version": args.data_storage_version}
        if args.max_rows_per_file:
            opts["max_rows_per_file"] = args.max_rows_per_file
        write_dataset(reader, args.dst, **opts)
    prog.line(final=True)
    return 0


def _cmd_compact(args) -> int:
    from lancenb.dataset import dataset as open_dataset  # lazy: numba, start-up
    from lancenb.dataset.write.compaction import (  # lazy: numba, start-up
        compact_files,
        compaction_rows,
    )

    ds = open_dataset(args.uri)
    target = args.target_rows_per_fragment
    total = compaction_rows(ds, target_rows_per_fragment=target)
    t0 = time.perf_counter()
    with progress_bar("compacting", total, enabled=None if not args.quiet else False) as bar:
        m = compact_files(ds, target_rows_per_fragment=target, progress=bar.update)
    if not args.quiet:
        print(f"compacted: {m.fragments_removed} fragments into {m.fragments_added} "
              f"({total:,} rows rewritten, {time.perf_counter() - t0:.1f} s); version "
              f"{ds.version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
