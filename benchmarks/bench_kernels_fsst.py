#!/usr/bin/env python
"""FSST kernels: throughput and compression ratio on generated corpora, next to
pylance's FSST pages for the same strings.

Run from the repository root::

    python benchmarks/bench_kernels_fsst.py [--rows N] [--repeat K] [--quick]

For each corpus (URL-like, e-mail-like, English-like text; deterministic for a seed)
it measures, single-threaded, with the median of K timed runs after a warm-up:

- **build**: :func:`sample_strings` + :func:`build_table` (one table for the corpus);
- **compress**: :func:`compress` into a :func:`compress_bound` buffer;
- **decompress, two passes**: :func:`decompress_size` then :func:`decompress` into a
  buffer of exactly that size;
- **decompress, one pass**: :func:`decompress` alone into a ``8 * len(codes)`` buffer
  (allocated once, outside the timing);
- **chunks**: the codes cut into 4 KiB mini-block chunks (as in a page), decoded by
  joining them (``kernels/variable``'s ``decode_size`` + ``decode_fill``) then
  :func:`decompress`, against :func:`decompress_chunks` straight from the chunks;
- **memcpy**: ``np.copyto`` of the same number of bytes into a preallocated buffer.

Times are the calling thread's CPU time (``time.thread_time``), so other load on a
shared machine inflates them less than wall-clock time would. Throughputs are MB/s
(10^6 bytes) of *uncompressed* data. Ratios are uncompressed /
compressed bytes. "vs pylance" writes the corpus with pylance (format 2.1, which picks
``Fsst{Variable(Flat(32))}`` mini-block pages), reads the page sizes from lancenb's
reader metadata, and compares them with the same rows compressed by these kernels
(one table per pylance page) and framed by lancenb's mini-block encoder; page bytes
include the 2312-byte table. Every compressed corpus is decompressed and compared with
its input; a mismatch aborts the run. No timing assertions.
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
from lancenb.kernels import variable as kv
from lancenb.kernels.fsst import fsst as kf
from lancenb.kernels.fsst import fsst_build as kfb
from lancenb.kernels.fsst import fsst_chunks as kc

from lancenb.encodings.blocks import Variable
from lancenb.encodings.physical import variable as variable_codec
from lancenb.encodings.structural import miniblock
from lancenb.file import LanceFileReader

WORDS = (
    "the of and to in is was he for it with as his on be at by had are but from or have an "
    "they which one you were all her she there would their we him been has when who will no "
    "more if out so up said what its about than into them can only other time new some could "
    "these two may first then do any like my now over such our man me even most made after "
    "also did many off before must well back through years much where your way down should "
    "because long each just state people those too how little good very make world still "
    "see own men work here between both life being under never day same another know while "
    "last might us great old year come since against go came right used take three himself "
    "few house use during without again place around however home small found thought went "
    "say part once general high upon school every don does got united left number course war "
    "until always away something fact water though less public put think almost hand enough "
    "far took head yet government system better set told nothing night end why called didn "
    "eyes find going look asked later knew point next program city business give group toward "
    "young days let room president side social given present several order national second "
    "possible rather per face among form important often things looked early white case john "
    "become large big need four within felt children along saw best church ever least power "
    "development light thing seemed family interest want members mind country area others "
    "done turned although open problem god service certain kind different thus began door "
    "help means sense whole matter perhaps itself york times law human line above name example "
    "action company hands local show whether five history gave today either act feet across "
    "taken past quite anything seen having death experience body word half really week free "
    "information"
).split()


def _pick(rng, items, n, zipf=None):
    if zipf is None:
        return [items[i] for i in rng.integers(0, len(items), n)]
    p = 1.0 / np.arange(1, len(items) + 1) ** zipf
    return [items[i] for i in rng.choice(len(items), n, p=p / p.sum())]


def urls(rng, n):
    hosts = [f"{a}{b}" for a in WORDS[60:80] for b in WORDS[200:215]]
    tlds = ["com", "org", "net", "io", "dev", "co.uk", "de"]
    host = _pick(rng, hosts, n, zipf=1.1)
    seg = _pick(rng, WORDS[100:300], 4 * n, zipf=0.9)
    out = []
    for i in range(n):
        scheme = "https://" if rng.random() < 0.8 else "http://"
        www = "www." if rng.random() < 0.5 else ""
        depth = int(rng.integers(1, 5))
        path = "/".join(seg[4 * i:4 * i + depth])
        tail = ""
        r = rng.random()
        if r < 0.3:
            tail = f"/{int(rng.integers(0, 10**7))}"
        elif r < 0.5:
            tail = f"?id={int(rng.integers(0, 10**6))}&ref={seg[4 * i + 3]}"
        elif r < 0.6:
            tail = ".html"
        out.append(f"{scheme}{www}{host[i]}.{tlds[i % len(tlds)]}/{path}{tail}")
    return out


def emails(rng, n):
    first = ["james", "mary", "john", "patricia", "robert", "jennifer", "michael", "linda",
             "william", "elizabeth", "david", "barbara", "richard", "susan", "joseph", "jessica",
             "thomas", "sarah", "charles", "karen", "daniel", "nancy", "matthew", "lisa",
             "anthony", "betty", "mark", "margaret", "donald", "sandra", "steven", "ashley"]
    last = ["smith", "johnson", "williams", "brown", "jones", "garcia", "miller", "davis",
            "rodriguez", "martinez", "hernandez", "lopez", "gonzalez", "wilson", "anderson",
            "thomas", "taylor", "moore", "jackson", "martin", "lee", "perez", "thompson",
            "white", "harris", "sanchez", "clark", "ramirez", "lewis", "robinson", "walker"]
    domains = ["gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com",
               "example.org", "university.edu", "company.co.uk", "mail.de", "proton.me"]
    f = _pick(rng, first, n, zipf=0.8)
    la = _pick(rng, last, n, zipf=0.8)
    d = _pick(rng, domains, n, zipf=1.2)
    out = []
    for i in range(n):
        r = rng.random()
        sep = "." if r < 0.5 else ("_" if r < 0.65 else "")
        num = str(int(rng.integers(1, 2000))) if rng.random() < 0.4 else ""
        out.append(f"{f[i]}{sep}{la[i]}{num}@{d[i]}")
    return out


def english(rng, n):
    w = _pick(rng, WORDS, 16 * n, zipf=1.0)
    out = []
    k = 0
    for _ in range(n):
        m = int(rng.integers(4, 16))
        s = " ".join(w[k:k + m])
        k += m
        out.append(s[0].upper() + s[1:] + ("." if rng.random() < 0.8 else "?"))
    return out


CORPORA = {"url": urls, "email": emails, "english": english}


def arrow_parts(arr: pa.Array):
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset:arr.offset + len(arr) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(arr.buffers()[2], np.uint8)
    return offsets, data


def median_time(fn, repeat: int) -> float:
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.thread_time()
        fn()
        ts.append(time.thread_time() - t0)
    return statistics.median(ts)


def compress_all(offsets, data):
    so, sd = kfb.sample_strings(offsets, data)
    table = kf.new_table()
    n = kfb.build_table(so, sd, *table)
    assert n >= 0, n
    oo = np.empty(len(offsets), np.int64)
    od = np.empty(kf.compress_bound(offsets), np.uint8)
    size = kf.compress(offsets, data, *table, oo, od)
    assert size >= 0, size
    return table, oo, od[:size].copy()


def check_round_trip(table, codes_offsets, codes, offsets, data):
    err = np.zeros(2, np.int64)
    size = kf.decompress_size(codes_offsets, codes, *table, err)
    out_o = np.empty(len(codes_offsets), np.int64)
    out = np.empty(size, np.uint8)
    assert kf.decompress(codes_offsets, codes, *table, out_o, out) == size
    if not (np.array_equal(out_o, offsets - offsets[0])
            and np.array_equal(out, data[offsets[0]:offsets[-1]])):
        sys.exit("round trip mismatch: aborting")


def bench_corpus(name, values, repeat):
    arr = pa.array(values, pa.string())
    offsets, data = arrow_parts(arr)
    raw = int(offsets[-1] - offsets[0])
    table, co, codes = compress_all(offsets, data)
    check_round_trip(table, co, codes, offsets, data)
    row = {"corpus": name, "values": len(values), "raw_mb": raw / 1e6,
           "ratio": raw / len(codes), "symbols": int(table[2][kf.N_SYMBOLS])}

    def build():
        so, sd = kfb.sample_strings(offsets, data)
        kfb.build_table(so, sd, *kf.new_table())
    row["build_ms"] = median_time(build, repeat) * 1e3

    oo = np.empty(len(offsets), np.int64)
    od = np.empty(kf.compress_bound(offsets), np.uint8)
    row["compress"] = raw / median_time(lambda: kf.compress(offsets, data, *table, oo, od),
                                        repeat) / 1e6

    err = np.zeros(2, np.int64)
    out_o = np.empty(len(co), np.int64)
    out = np.empty(raw, np.uint8)

    def size_and_fill():
        size = kf.decompress_size(co, codes, *table, err)
        kf.decompress(co, codes, *table, out_o, out[:size])
    row["decompress"] = raw / median_time(size_and_fill, repeat) / 1e6
    bound = np.empty(8 * len(codes), np.uint8)
    row["fill"] = raw / median_time(lambda: kf.decompress(co, codes, *table, out_o, bound),
                                    repeat) / 1e6
    # from mini-block chunks (4 KiB Variable chunks of the codes, as in a page): the
    # codes joined first (kernels/variable.decode_size + decode_fill) then decompress,
    # against decompress_chunks in one pass
    block = Variable(co, codes, len(values), 32)
    csrc, cstarts, csizes, _ = variable_codec.encode_chunks(block, variable_codec.plan(block))
    cstarts, csizes = cstarts[:, 0].copy(), csizes[:, 0].copy()
    counts = np.diff(variable_codec.plan(block))
    cerr = np.zeros(3, np.int64)
    joined_o = np.empty(len(co), np.int64)
    joined = np.empty(len(codes), np.uint8)

    def join_then_decode():
        kv.decode_size(csrc, cstarts, csizes, counts, 4, err)
        kv.decode_fill(csrc, cstarts, counts, 4, joined_o, joined)
        kf.decompress(joined_o, joined, *table, out_o, bound)
    row["join"] = raw / median_time(join_then_decode, repeat) / 1e6
    cbound = np.empty(kc.output_bound(len(csrc), csizes), np.uint8)
    got = kc.decompress_chunks(csrc, cstarts, csizes, counts, 4, *table, out_o, cbound, cerr)
    if got != raw or cbound[:got].tobytes() != data[offsets[0]:offsets[-1]].tobytes():
        raise SystemExit(f"{name}: decompress_chunks mismatch")
    row["chunks"] = raw / median_time(lambda: kc.decompress_chunks(
        csrc, cstarts, csizes, counts, 4, *table, out_o, cbound, cerr), repeat) / 1e6
    src = data[offsets[0]:offsets[-1]]
    row["memcpy"] = raw / median_time(lambda: np.copyto(out, src), repeat) / 1e6
    row.update(vs_pylance(arr))
    return row


def vs_pylance(arr: pa.Array) -> dict:
    import lance.file as lf

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "c.lance")
        t = pa.table({"s": arr})
        w = lf.LanceFileWriter(path, t.schema, version="2.1")
        w.write_batch(t)
        w.close()
        pages = LanceFileReader(path).metadata().columns[0].pages
    ours = theirs = 0
    row0 = 0
    kinds = set()
    for p in pages:
        kinds.add(p.description)
        theirs += sum(b.size for b in p.buffers)
        if p.layout.mini_block_layout.value_compression.HasField("fsst"):
            theirs += kf.TABLE_BYTES
        offsets, data = arrow_parts(arr.slice(row0, p.num_rows))
        table, co, codes = compress_all(offsets, data)
        bufs, _ = miniblock.encode(Variable(co, codes, p.num_rows, 32), None)
        ours += sum(len(b) for b in bufs) + kf.TABLE_BYTES
        row0 += p.num_rows
    return {"pylance_pages": len(pages), "pylance_kind": ",".join(sorted(kinds)),
            "pylance_bytes": theirs, "ours_bytes": ours}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--quick", action="store_true", help="20k rows, 3 repeats")
    args = ap.parse_args()
    if args.quick:
        args.rows, args.repeat = 20_000, 3
    rows = []
    for name, gen in CORPORA.items():
        values = gen(np.random.default_rng(args.seed), args.rows)
        rows.append(bench_corpus(name, values, args.repeat))
        print(f"{name}: done", file=sys.stderr, flush=True)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    print(f"## FSST kernels (`benchmarks/bench_kernels_fsst.py`)\n\n{args.rows:,} values per "
          f"corpus, median of {args.repeat} runs (thread CPU time), one thread; {cpu}, "
          f"{os.cpu_count()} CPUs; numpy {np.__version__}. Throughput in MB/s of uncompressed "
          f"data.\n")
    print("| corpus | MB | symbols | build ms | compress | decompress, two passes "
          "| decompress, one pass | chunks: join + decompress | chunks: decompress_chunks "
          "| memcpy | ratio | pylance page B | lancenb page B | lancenb/pylance |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['corpus']} | {r['raw_mb']:.2f} | {r['symbols']} | {r['build_ms']:.1f} "
              f"| {r['compress']:.0f} | {r['decompress']:.0f} | {r['fill']:.0f} "
              f"| {r['join']:.0f} | {r['chunks']:.0f} | {r['memcpy']:.0f} | {r['ratio']:.2f} "
              f"| {r['pylance_bytes']:,} "
              f"| {r['ours_bytes']:,} | {r['ours_bytes'] / r['pylance_bytes']:.3f} |")
    print("\npylance pages: " + "; ".join(f"{r['corpus']} {r['pylance_pages']} x "
                                          f"{r['pylance_kind']}" for r in rows))


if __name__ == "__main__":
    main()
