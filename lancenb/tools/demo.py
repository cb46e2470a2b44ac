"""``lancenb demo``: Spark writes, appends and reads a generated dataset; lancenb
deletes, takes and shows encodings (what ``make demo`` runs; docs/cli.md)."""

from __future__ import annotations

import os
import tempfile
import time

__all__ = ["demo", "DEMO_JVM_OPTIONS"]


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
                        out[f.name][1][p.description] = out[f.name][1].get(p.description, 0) + 1
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
