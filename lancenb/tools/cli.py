"""The ``lancenb`` command line: inspect, validate, convert, compact, demo, warmup.

``lancenb demo`` is what ``make demo`` runs. See docs/cli.md for real output.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from lancenb._version import __version__
from lancenb.errors import InvalidInputError, LanceError, LanceFileNotFoundError
from lancenb.progress import progress_bar
from lancenb.tools.demo import DEMO_JVM_OPTIONS, demo

__all__ = ["main", "demo"]

DEBUG_ENV = "LANCENB_DEBUG"  # set to 1: errors end in their traceback, as Python prints it


def main(argv: list[str] | None = None) -> int:
    """Run the ``lancenb`` command line with ``argv`` (default ``sys.argv[1:]``).

    Commands: ``inspect``, ``validate``, ``convert``, ``compact``, ``demo``, ``warmup``
    (``lancenb --help``), and ``lancenb --version``. A refused input or a failure
    prints one line naming what is wrong, never a traceback (unless ``--debug`` or
    ``LANCENB_DEBUG=1``).

    Returns
    -------
    int
        The exit status: 0 on success, 1 when an input is refused or ``validate`` finds a
        problem, 130 when interrupted (argparse exits with 2 on a usage error).

    Examples
    --------
    >>> from lancenb.tools.cli import main
    >>> main(["validate", "orders.lance"])  # doctest: +SKIP
    validated dataset orders.lance: 2 manifests, 2 data files, 8 pages, 0 deletion files
    0
    """
    try:
        return _main(argv)
    except BrokenPipeError:  # output piped into head and friends
        sys.stderr.close()
        return 0


def _positive(text: str) -> int:
    """argparse type: an integer of at least 1 (a usage error otherwise)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return n


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lancenb", description="See inside, check, convert and compact Lance files "
                                    "and datasets (docs/cli.md).")
    parser.add_argument("--version", action="version", version=f"lancenb {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"on an error, print its traceback (or set {DEBUG_ENV}=1)")
    common = argparse.ArgumentParser(add_help=False)  # --debug after the command too
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, **kw):
        return sub.add_parser(name, parents=[common], **kw)

    p_ins = command("inspect", help="what a Lance file or dataset holds: versions, "
                                    "fragments, columns, pages, encodings and why")
    p_ins.add_argument("path", help="a .lance file or a dataset directory/URI")
    p_ins.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_ins.add_argument("--version", type=_positive, default=None,
                       help="dataset version to detail")
    p_ins.add_argument("--files", action="store_true",
                       help="datasets: also inspect every data file")
    p_ins.add_argument("--no-explain", action="store_true",
                       help="files: do not decode pages to explain the encodings")
    p_val = command("validate", help="decode every page and deletion file; report every "
                                     "problem (exit status 1 if any)")
    p_val.add_argument("uri", help="a .lance file or a dataset directory/URI")
    p_val.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_conv = command("convert", help="Parquet, CSV, Arrow IPC or Lance in; a Lance dataset "
                                     "(or .parquet) out, streamed")
    p_conv.add_argument("src", help="a file, a directory of Parquet files or a dataset")
    p_conv.add_argument("dst", help="a dataset directory/URI, or a .parquet file")
    p_conv.add_argument("--mode", choices=["create", "append", "overwrite"], default="create")
    p_conv.add_argument("--max-rows-per-file", type=_positive, default=None)
    p_conv.add_argument("--data-storage-version", default=None,
                        help="file format of the data files: 2.2 (default, as pylance "
                             "14), 2.1 or 2.0")
    p_conv.add_argument("--batch-rows", type=_positive, default=65536,
                        help="rows read from the source at a time")
    p_conv.add_argument("--format", choices=["parquet", "csv", "ipc", "lance"], default=None,
                        help="source format (default: from the name)")
    p_conv.add_argument("--quiet", action="store_true", help="no progress lines")
    p_comp = command("compact", help="merge small fragments and drop deleted rows "
                                     "(ds.optimize.compact_files), with a progress bar")
    p_comp.add_argument("uri")
    p_comp.add_argument("--target-rows-per-fragment", type=_positive, default=1024 * 1024)
    p_comp.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p_demo = command("demo", help="Spark writes, appends and reads a generated dataset; "
                                  "lancenb deletes, takes and shows encodings")
    p_demo.add_argument("--rows", type=_positive, default=200_000)
    p_demo.add_argument("--out-dir", default=None, help="keep the dataset in this directory")
    p_demo.add_argument("--jvm-options", default=DEMO_JVM_OPTIONS,
                        help="Java options of the demo's Spark driver ('' for the JVM's "
                             f"defaults; default {DEMO_JVM_OPTIONS})")
    p_warm = command("warmup", help="compile every kernel into the Numba cache now (once "
                                    "per machine or image), in parallel")
    # (int: warmup() refuses a count under 1 itself, in one line, exit status 1)
    p_warm.add_argument("--processes", type=int, default=None,
                        help="worker processes (default: the number of CPUs)")
    p_warm.add_argument("--quiet", action="store_true", help="no progress line")
    return parser


_COMMANDS = {"inspect": lambda a: _cmd_inspect(a), "validate": lambda a: _cmd_validate(a),
             "convert": lambda a: _cmd_convert(a), "compact": lambda a: _cmd_compact(a),
             "warmup": lambda a: _cmd_warmup(a),
             "demo": lambda a: demo(a.rows, a.out_dir, jvm_options=a.jvm_options)}


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")
    where = f"lancenb {args.command}"
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{where}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except LanceError as e:
        if debug:
            raise
        print(f"{where}: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # one line, never a traceback (unless --debug)
        if debug:
            raise
        kind = "" if isinstance(e, (OSError, ImportError)) else "unexpected "
        print(f"{where}: {kind}{type(e).__name__}: {_one_line(e)} ({DEBUG_ENV}=1 or "
              f"--debug for the traceback)", file=sys.stderr)
        return 1


def _one_line(e: BaseException, limit: int = 400) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit] + "..."


# -- inspect ---------------------------------------------------------------------------
def _cmd_warmup(args) -> int:
    from lancenb.tools.warmup import warmup  # lazy: numba, CLI start-up

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
def _source(src: str, fmt: str, batch_rows: int):
    """``(RecordBatchReader, total rows or None)`` streaming the source."""
    import pyarrow as pa  # lazy: CLI start-up

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


def _check_paths(src: str, dst: str) -> None:
    """Local paths: the source exists (an empty directory is no input) and the
    destination is not a file, unless a .parquet one."""
    if "://" not in src and not os.path.exists(src):
        raise LanceFileNotFoundError(f"no such file or directory: {src!r}")
    if "://" not in src and os.path.isdir(src) \
            and not any(not n.startswith((".", "_")) or n == "_versions"
                        for n in os.listdir(src)):
        raise InvalidInputError(f"{src!r} is an empty directory: neither a Lance dataset (no "
                                f"_versions/ in it) nor a directory of Parquet files")
    if "://" not in dst and os.path.isfile(dst) and not dst.lower().endswith(".parquet"):
        raise InvalidInputError(f"{dst!r} is a file: the destination is a dataset directory "
                                f"(or a .parquet file)")


def _format_of(src: str) -> str:
    low = src.rstrip("/").lower()
    if os.path.isdir(os.path.join(src, "_versions")) or low.endswith(".lance"):
        return "lance"
    if low.endswith((".parquet", ".pq")) or os.path.isdir(src):
        return "parquet"
    if low.endswith((".csv", ".csv.gz", ".tsv")):
        return "csv"
    if low.endswith((".arrow", ".ipc", ".feather", ".arrows")):
        return "ipc"
    raise InvalidInputError(f"cannot tell the format of {src!r}; pass --format")


class _Progress:
    """Counts batches going by: a progress bar when stderr is a terminal
    (:mod:`lancenb.progress`), else a line to stderr every ``every`` seconds."""

    def __init__(self, total: int | None, quiet: bool, every: float = 2.0):
        self.total, self.quiet, self.every = total, quiet, every
        self.rows = self.bytes = 0
        self.start = self.last = time.perf_counter()
        self.tty = sys.stderr.isatty()
        self.bar = progress_bar("converting", total, enabled=self.tty and not quiet)

    def wrap(self, reader, name: str):
        """``reader``'s batches, counted; a read failure names the source and the rows
        read before it."""
        import pyarrow as pa  # lazy: CLI start-up

        def batches():
            it = iter(reader)
            while True:
                try:
                    b = next(it)
                except StopIteration:
                    return
                except (pa.ArrowException, OSError) as e:
                    raise InvalidInputError(f"reading {name!r} failed after {self.rows:,} "
                                            f"rows: {type(e).__name__}: {e}") from e
                yield b

        def gen():
            for b in batches():
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
    import pyarrow as pa  # lazy: CLI start-up

    _check_paths(args.src, args.dst)
    fmt = args.format or _format_of(args.src)
    try:
        src, total = _source(args.src, fmt, args.batch_rows)
    except pa.ArrowException as e:  # not the format it was taken for
        raise InvalidInputError(f"cannot read {args.src!r} as {fmt}"
                                f"{'' if args.format else ' (from its name; or pass --format)'}"
                                f": {e}") from e
    prog = _Progress(total, args.quiet)
    reader = prog.wrap(src, args.src)
    if args.dst.lower().endswith(".parquet"):
        import pyarrow.parquet as pq  # lazy: CLI start-up

        existed = os.path.exists(args.dst)
        try:
            with pq.ParquetWriter(args.dst, reader.schema) as w:
                for b in reader:
                    w.write_batch(b)
        except BaseException:
            if not existed and os.path.isfile(args.dst):  # no half-written file left
                os.remove(args.dst)
            raise
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
