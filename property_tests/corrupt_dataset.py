"""Dataset-level corruption fuzzing: whole datasets with damaged metadata must read or
raise a :class:`~lancenb.errors.LanceError`, quickly, in bounded memory, and never
crash the interpreter.

* :func:`seed_datasets` writes small valid datasets with lancenb and pylance: several
  fragments, Arrow and roaring deletion files, stable row ids, transaction files,
  tags and the latest-version hint.
* :func:`mutate_dataset` copies one seed and damages one of its metadata objects:
  the latest manifest, as bytes (:func:`corrupt.mutate`) or as decoded protobuf
  fields (:func:`mutate_message`: paths, counts, ids, offsets, flags, row-id
  sequences, timestamps, each set to a value chosen to hurt: 0, off by one,
  ``2**32``, ``2**36``, ``2**64 - 1``, paths leaving the dataset); a transaction
  file; a deletion file; a tag file; the hint file; or it adds a junk file under
  ``_versions/``.
* :data:`DATASET_WORKER` opens each mutated dataset and exercises it (scan, filtered
  count, versions, tags, row ids; on a share of the inputs each: takes, an older
  version, ``validate``, and one write: delete, compaction or cleanup), under an
  address-space limit (``RLIMIT_AS``, :data:`MEMORY_LIMIT`) and a per-input limit
  of CPU time (ten times that of wall-clock time), via :func:`corrupt.run_batch`. Outcomes: ``ok``,
  ``lance-error``, and the problems ``other`` (a non-Lance exception), ``memory``
  (``MemoryError`` or a peak RSS over :data:`RSS_LIMIT_MIB`), ``hang`` and ``crash``.

``scripts/fuzz_datasets.py`` runs this at scale (the nightly figure in RESULTS.md);
``test_corruption.py`` runs a small derandomised batch in ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap

import numpy as np
from corrupt import PEAK_RSS_SOURCE, mutate

MEMORY_LIMIT = 2 << 30  # the worker's address space (RLIMIT_AS)
RSS_LIMIT_MIB = 1024  # a peak RSS above this after an input is a "memory" problem

_HOSTILE_PATHS = ["../../other/data/x.lance", "/etc/passwd", "x.lance::memory://a",
                  "memory://x.lance", "file:///etc/passwd", "a\x00b.lance", "", ".", "..",
                  "sub/../../x.lance", "s3://bucket/x.lance", "C:\\x.lance", "x" * 5000]
_HOSTILE_INTS = [0, 1, 2, 3, 255, 256, 4095, 4096, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1,
                 2**32, 2**32 + 1, 2**36, 2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1]


def seed_datasets(d: str) -> list[str]:
    """Write the valid seed datasets into ``d``; returns their paths."""
    import lance
    import pyarrow as pa

    import lancenb

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    n = 600
    t = pa.table({"id": pa.array(np.arange(n), pa.int64()),
                  "v": pa.array(rng.standard_normal(n).astype(np.float32)),
                  "s": pa.array([f"s{i % 13}" if i % 7 else None for i in range(n)]),
                  "l": pa.array([[i, i + 1] if i % 5 else [] for i in range(n)],
                                pa.list_(pa.int32()))})
    out = []
    a = os.path.join(d, "lancenb")  # 3 fragments, Arrow deletions, a tag
    lancenb.write_dataset(t.slice(0, 400), a, max_rows_per_file=200)
    lancenb.write_dataset(t.slice(400), a, mode="append")
    lancenb.dataset(a).delete("id % 7 = 3")
    lancenb.dataset(a).tags.create("first", 1)
    out.append(a)
    b = os.path.join(d, "lancenb-rowids")  # stable row ids, a roaring deletion file
    big = pa.table({"id": pa.array(np.arange(6000), pa.int64())})
    lancenb.write_dataset(big, b, enable_stable_row_ids=True)
    lancenb.dataset(b).delete("id >= 500")
    lancenb.dataset(b).update({"id": "id + 1"}, where="id < 10")
    out.append(b)
    c = os.path.join(d, "pylance")  # pylance's own metadata: .txn files, hint, tags
    lance.write_dataset(t, c, max_rows_per_file=300, enable_stable_row_ids=True)
    lance.dataset(c).delete("id % 11 = 0")
    lance.dataset(c).tags.create("v1", 1)
    out.append(c)
    e = os.path.join(d, "pylance-2.0")
    lance.write_dataset(t.drop_columns(["l"]), e, data_storage_version="2.0")
    lance.dataset(e).delete("id < 5")
    out.append(e)
    return out


# -- protobuf field mutation -----------------------------------------------------------------
def _leaves(msg, out: list, depth: int = 0) -> list:
    """Every settable scalar of a message tree: ``(message, field, index or None)``."""
    if depth > 8:
        return out
    for fd in msg.DESCRIPTOR.fields:
        repeated = fd.is_repeated
        if fd.message_type is not None:
            if fd.message_type.GetOptions().map_entry:
                out.append((msg, fd, "map"))
                continue
            if repeated:
                for child in getattr(msg, fd.name):
                    _leaves(child, out, depth + 1)
            elif msg.HasField(fd.name):
                _leaves(getattr(msg, fd.name), out, depth + 1)
            continue
        if repeated:
            vals = getattr(msg, fd.name)
            out.extend((msg, fd, i) for i in range(len(vals)))
            out.append((msg, fd, len(vals)))  # append one
        else:
            out.append((msg, fd, None))
    return out


def _value_for(fd, old, rng: np.random.Generator):
    if fd.type == fd.TYPE_STRING:
        return str(_HOSTILE_PATHS[int(rng.integers(0, len(_HOSTILE_PATHS)))]) \
            if rng.random() < 0.7 else (old or "x")[::-1] + "\u00b2"
    if fd.type == fd.TYPE_BYTES:
        if rng.random() < 0.5 and old:
            return mutate(bytes(old), rng)
        from lancenb.table.rowids import encode_range_row_ids

        lo = int(rng.choice([0, 1, 2**32]))
        return encode_range_row_ids(lo, lo + int(rng.choice(_HOSTILE_INTS[:-4])))
    if fd.type == fd.TYPE_BOOL:
        return not old
    if fd.type in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
        return float(rng.choice([0.0, -1.0, 1e300, float("nan")]))
    if fd.type == fd.TYPE_ENUM:
        return int(rng.integers(-1, 5))
    bits = 32 if fd.type in (fd.TYPE_INT32, fd.TYPE_UINT32, fd.TYPE_SINT32, fd.TYPE_FIXED32,
                             fd.TYPE_SFIXED32) else 64
    signed = fd.type in (fd.TYPE_INT32, fd.TYPE_INT64, fd.TYPE_SINT32, fd.TYPE_SINT64,
                         fd.TYPE_SFIXED32, fd.TYPE_SFIXED64)
    pick = int(rng.integers(0, 4))
    v = int(old or 0) + (1 if pick == 0 else -1) if pick < 2 else \
        int(rng.choice(_HOSTILE_INTS))
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return min(max(v, lo), hi)


def mutate_message(msg, rng: np.random.Generator, count: int = 1) -> None:
    """Set ``count`` random scalar fields of ``msg`` (anywhere in its tree) to hostile
    values of their type."""
    for _ in range(count):
        leaves = _leaves(msg, [])
        if not leaves:
            return
        m, fd, idx = leaves[int(rng.integers(0, len(leaves)))]
        if idx == "map":
            value = _map_value(getattr(m, fd.name))
            if value is not None:
                getattr(m, fd.name)["x\u00b2"] = value
            continue
        if idx is None:
            setattr(m, fd.name, _value_for(fd, getattr(m, fd.name), rng))
            continue
        vals = getattr(m, fd.name)
        if idx == len(vals):
            vals.append(_value_for(fd, None, rng))
        else:
            vals[idx] = _value_for(fd, vals[idx], rng)


def _map_value(mapping):
    entry = mapping.GetEntryClass()
    vfd = entry.DESCRIPTOR.fields_by_name["value"]
    if vfd.message_type is not None:
        return None
    return b"\xff" * 3 if vfd.type == vfd.TYPE_BYTES else "../\u00b2"


# -- dataset mutation ------------------------------------------------------------------------
def _latest_manifest(root: str) -> str:
    from lancenb.table.manifest import parse_manifest_name

    vd = os.path.join(root, "_versions")
    names = [(parse_manifest_name(n), n) for n in os.listdir(vd)]
    return os.path.join(vd, max((p[0], n) for p, n in names if p)[1])


def _files(root: str, sub: str, ext: str = "") -> list[str]:
    p = os.path.join(root, sub)
    return sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(ext)) \
        if os.path.isdir(p) else []


def _rewrite(path: str, data: bytes) -> None:
    """Replace ``path`` (maybe a hard link to a seed's file) by a new file."""
    if os.path.exists(path):
        os.unlink(path)
    with open(path, "wb") as f:
        f.write(data)


def mutate_dataset(seed: str, dst: str, rng: np.random.Generator) -> str:
    """Copy the dataset ``seed`` to ``dst`` and damage one of its metadata objects;
    returns a short description of the damage."""
    from lancenb._proto import transaction_pb2
    from lancenb.table.manifest import frame_manifest, parse_manifest_file

    # unchanged files are hard links (fast); a damaged one is unlinked and rewritten,
    # and writers in the worker only ever create new names or replace atomically
    shutil.copytree(seed, dst, copy_function=os.link)
    kind = ["manifest-fields", "manifest-fields", "manifest-fields", "manifest-bytes",
            "transaction", "deletion", "tag", "hint", "junk-name", "txn-fields",
            "older-manifest"][int(rng.integers(0, 11))]
    if kind in ("manifest-fields", "txn-fields", "older-manifest"):
        if kind == "older-manifest":
            cands = _files(dst, "_versions", ".manifest")
            path = cands[int(rng.integers(0, len(cands)))]
        else:
            path = _latest_manifest(dst)
        with open(path, "rb") as f:
            mf = parse_manifest_file(f.read(), path)
        txn = mf.transaction()
        if kind == "txn-fields" and txn is not None:
            mutate_message(txn, rng, int(rng.integers(1, 3)))
        else:
            mutate_message(mf.manifest, rng, int(rng.integers(1, 3)))
        raw = frame_manifest(mf.manifest, txn)
        _rewrite(path, raw)
        return f"{kind} {os.path.basename(path)}"
    if kind == "transaction" and _files(dst, "_transactions"):
        cands = _files(dst, "_transactions")
        path = cands[int(rng.integers(0, len(cands)))]
        with open(path, "rb") as f:
            raw = f.read()
        if rng.random() < 0.5:
            txn = transaction_pb2.Transaction()
            txn.ParseFromString(raw)
            mutate_message(txn, rng, int(rng.integers(1, 3)))
            raw = txn.SerializeToString()
        else:
            raw = mutate(raw, rng)
        _rewrite(path, raw)
        return f"transaction {os.path.basename(path)}"
    if kind == "deletion" and _files(dst, "_deletions"):
        cands = _files(dst, "_deletions")
        path = cands[int(rng.integers(0, len(cands)))]
        with open(path, "rb") as f:
            raw = f.read()
        _rewrite(path, mutate(raw, rng))
        return f"deletion {os.path.basename(path)}"
    if kind == "tag":
        tags = os.path.join(dst, "_refs", "tags")
        os.makedirs(tags, exist_ok=True)
        body = [b"[]", b"{}", b'{"version": "x"}', b'{"version": -1}', b"[" * 50_000,
                b'{"version": 18446744073709551615, "manifestSize": 1}', b"\xff\xfe",
                json.dumps({"version": int(rng.choice(_HOSTILE_INTS)),
                            "manifestSize": 10}).encode()][int(rng.integers(0, 8))]
        existing = _files(dst, "_refs/tags", ".json")
        path = existing[0] if existing and rng.random() < 0.5 else os.path.join(tags, "t.json")
        _rewrite(path, body if rng.random() < 0.7 else mutate(body, rng))
        return f"tag {body[:30]!r}"
    if kind == "hint":
        _rewrite(os.path.join(dst, "_versions", "latest_version_hint.json"),
                 [b"junk", b"[]", b'{"version": 99}', b'{"version": "x"}',
                  b"{" * 10_000][int(rng.integers(0, 5))])
        return "hint"
    # a junk name under _versions/ (with a manifest's bytes or junk)
    name = ["\u00b2.manifest", "99999999999999999999.manifest", "18446744073709551615.manifest",
            "0.manifest", "1.manifest", "00000000000000000000.manifest",
            "18446744073709551613.manifest", ".manifest", "x.manifest"][int(rng.integers(0, 9))]
    with open(_latest_manifest(dst), "rb") as f:
        raw = f.read()
    _rewrite(os.path.join(dst, "_versions", name), raw if rng.random() < 0.5 else mutate(raw, rng))
    return f"junk-name {name!r}"


def make_dataset_mutants(seeds: list[str], out_dir: str, count: int,
                         seed: int = 0) -> list[tuple[str, str]]:
    """``count`` damaged copies of the seed datasets: ``[("dataset", path)]``."""
    rng = np.random.default_rng(seed)
    out = []
    for j in range(count):
        dst = os.path.join(out_dir, f"d{j}")
        mutate_dataset(seeds[int(rng.integers(0, len(seeds)))], dst, rng)
        out.append(("dataset", dst))
    return out


DATASET_WORKER = PEAK_RSS_SOURCE + textwrap.dedent("""
    import datetime, json, os, resource, signal, sys, traceback
    import numpy as np
    import lancenb
    from lancenb.errors import LanceError
    from lancenb.inspect import validate
    import datafusion, lancenb.expr.filters  # noqa: F401 - imported lazily otherwise,
    # inside the first input's time limit (an interrupted import leaves a broken module)

    # the limit is CPU time (all threads), so that a loaded machine does not turn a slow
    # input into a "hang"; the wall clock gets ten times as long
    LIMIT = int(os.environ.get("LANCENB_FUZZ_INPUT_SECONDS", "30"))
    RSS_LIMIT = int(os.environ.get("LANCENB_FUZZ_RSS_MIB", "1024"))

    def on_alarm(sig, frame):
        raise TimeoutError("input took longer than the limit")
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGPROF, on_alarm)

    def attempt(fn):
        # each step on its own: a LanceError in one still lets the others run
        try:
            fn()
            return "ok"
        except LanceError:
            return "lance-error"

    def exercise(uri, i):
        outcomes = []
        ds = lancenb.dataset(uri)
        outcomes.append(attempt(lambda: ds.to_table()))
        outcomes.append(attempt(lambda: ds.count_rows(filter="id > 3 AND id < 500")))
        outcomes.append(attempt(lambda: ds.versions()))
        outcomes.append(attempt(lambda: ds.tags.list()))
        outcomes.append(attempt(lambda: [f.row_ids() for f in ds.get_fragments()]))
        step = i % 16  # the costlier steps on a share of the inputs each
        if step in (2, 10):
            outcomes.append(attempt(lambda: ds.take([0, 1])))
            outcomes.append(attempt(lambda: ds.to_table(with_row_id=True, limit=10)))
            outcomes.append(attempt(lambda: lancenb.dataset(uri, version=1).count_rows()))
        if step == 6:
            outcomes.append(attempt(lambda: validate(uri)))
        if step == 1:
            outcomes.append(attempt(lambda: lancenb.dataset(uri).delete("id = 7")))
        elif step == 5:
            outcomes.append(attempt(lambda: lancenb.dataset(uri).optimize.compact_files()))
        elif step == 9:
            outcomes.append(attempt(lambda: lancenb.dataset(uri).cleanup_old_versions(
                older_than=datetime.timedelta(0))))
        return "ok" if all(o == "ok" for o in outcomes) else "lance-error"

    for line in sys.stdin:
        i, kind, path = json.loads(line)
        print(json.dumps(["start", i]), flush=True)
        signal.setitimer(signal.ITIMER_PROF, LIMIT)
        signal.alarm(10 * LIMIT)
        try:
            res = exercise(path, i)
        except LanceError:
            res = "lance-error"
        except TimeoutError:
            res = "hang"
        except MemoryError as e:
            res = "memory: MemoryError " + str(e)[:200]
        except BaseException as e:
            res = "other: " + "".join(traceback.format_exception(type(e), e, e.__traceback__)
                                      )[-1500:].strip()
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.alarm(0)
        peak = _hwm_kib() // 1024
        if peak > RSS_LIMIT and not res.startswith("memory"):
            res = f"memory: peak RSS {peak} MiB after this input"
        print(json.dumps(["done", i, res]), flush=True)
        if res.startswith("memory"):
            break  # the high-water mark stays: start a fresh worker
""")


def run_datasets(items: list[tuple[str, str]], **kw) -> dict:
    """:func:`corrupt.run_batch` with the dataset worker and the memory limit."""
    from corrupt import run_batch

    kw.setdefault("memory_limit", MEMORY_LIMIT)
    return run_batch(items, worker=DATASET_WORKER, **kw)
