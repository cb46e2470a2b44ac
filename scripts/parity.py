"""pylance's public names next to lancenb's: works / partial / not supported / missing.

Usage::

    .venv/bin/python scripts/parity.py              # the table on stdout
    .venv/bin/python scripts/parity.py --markdown docs/parity.md

For each surface (``lance.LanceDataset``, ``LanceScanner``, ``LanceFragment``,
``MergeInsertBuilder``, ``Tags``, the ``lance`` module's functions and classes) it
lists pylance's public names and looks each up on lancenb's counterpart:

* ``missing``: lancenb has no such name;
* ``not supported``: the name exists but raises ``NotSupportedError`` (the
  ``pyarrow.dataset.Dataset`` methods lancenb refuses, index search);
* ``partial``: it exists with a documented gap (listed in ``PARTIAL`` below);
* ``works``: it exists; ``tested`` when ``tests/dataset/test_parity.py`` (which
  compares lancenb's result with pylance's on the same data) or another test
  calling pylance on the same data exercises it (``TESTED_ELSEWHERE``).

Index methods (vector, scalar and full-text indices, out of lancenb's scope) are
counted apart. pylance is the reference here; lancenb itself never imports it.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARITY_TESTS = ROOT / "tests" / "dataset" / "test_parity.py"
INDEX = re.compile(r"index|indices|centroids|ivf|fts|tokeni|mem_wal|sstable|lsm|ftstoken|"
                   r"prewarm|IndexFile|FtsToken", re.IGNORECASE)
# typing names and re-exported helpers pylance's module happens to expose
NOT_API = {"Any", "Dict", "List", "Optional", "Union", "TYPE_CHECKING", "annotations"}

PARTIAL = {
    ("LanceDataset", "get_fragments"): "filter= is not supported",
    ("LanceDataset", "cleanup_old_versions"): "no delete_rate_limit / clean_referenced_branches",
    ("LanceDataset", "merge"): "no schema= for readers of another schema",
    ("LanceDataset", "optimize"): "compact_files only (no index optimisation)",
    ("LanceScanner", "explain_plan"): "a description of lancenb's steps, not DataFusion's",
    ("LanceScanner", "analyze_plan"): "a description of lancenb's steps, not DataFusion's",
    ("module", "write_dataset"): "base_store_params= and external blob modes are not supported",
    ("MergeInsertBuilder", "data_storage_version"): "only the dataset's own file version "
    "(pylance flags mixed-version datasets with reader feature 256)",
}
# names whose pylance comparison lives in another test module than test_parity.py
TESTED_ELSEWHERE: set = set()  # (surface, name) compared with pylance in other modules


def surfaces():
    """``[(surface, pylance object, lancenb object)]``."""
    import lance
    import lance.dataset  # noqa: F401  (the module: ``lance.dataset`` is a function)

    import lancenb
    from lancenb.dataset import lance_dataset as core
    from lancenb.dataset.read import scanner
    from lancenb.dataset.write import merge_insert as mutation

    ld = sys.modules["lance.dataset"]
    return [("LanceDataset", lance.LanceDataset, lancenb.LanceDataset),
            ("LanceScanner", lance.LanceScanner, scanner.LanceScanner),
            ("LanceFragment", lance.LanceFragment, lancenb.LanceFragment),
            ("MergeInsertBuilder", ld.MergeInsertBuilder, mutation.MergeInsertBuilder),
            ("Tags", ld.Tags, core.Tags),
            ("module", lance, lancenb)]


def public_names(obj, module: bool) -> list[str]:
    out = []
    for n in dir(obj):
        if n.startswith("_") or n in NOT_API:
            continue
        if module and inspect.ismodule(getattr(obj, n, None)):
            continue
        out.append(n)
    return sorted(out)


def status(surface: str, ours, name: str) -> str:
    if (surface, name) in PARTIAL:
        return "partial"
    try:
        attr = inspect.getattr_static(ours, name)
    except AttributeError:
        if surface == "module" and hasattr(ours, name):  # lazily imported names
            return "works"
        if re.search(rf"self\.{re.escape(name)}\s*=", inspect.getsource(ours)):
            return "works"  # an instance attribute set by the constructor
        return "missing"
    if getattr(attr, "__name__", "") == "_unsupported" or getattr(attr, "not_supported", False):
        return "not supported"
    return "works"


def tested(surface: str, name: str, text: str) -> bool:
    if (surface, name) in TESTED_ELSEWHERE:
        return True
    return f'"{surface}.{name}"' in text


def table() -> list[dict]:
    text = PARITY_TESTS.read_text() if PARITY_TESTS.exists() else ""
    rows = []
    for surface, ref, ours in surfaces():
        for name in public_names(ref, surface == "module"):
            st = "index" if INDEX.search(name) else status(surface, ours, name)
            rows.append({"surface": surface, "name": name, "status": st,
                         "tested": st in ("works", "partial") and tested(surface, name, text),
                         "note": PARTIAL.get((surface, name), "")})
    return rows


def summary(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        out[r["status"]] = out.get(r["status"], 0) + 1
    out["works and tested against pylance"] = sum(r["status"] == "works" and r["tested"]
                                                  for r in rows)
    out["total (non-index)"] = sum(r["status"] != "index" for r in rows)
    return out


def markdown(rows: list[dict]) -> str:
    s = summary(rows)
    lines = ["# pylance API parity", "",
             "Generated by `scripts/parity.py` (pylance 14.0.2 as the reference): each public "
             "name of pylance's main classes and module next to lancenb's. *tested*: "
             "`tests/dataset/test_parity.py` (or another test on the same data) compares "
             "lancenb's result with pylance's.", "",
             "| count | names |", "| --- | --- |"]
    lines += [f"| {k} | {v} |" for k, v in s.items()]
    lines += ["", "| surface | name | status | tested | note |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['surface']} | `{r['name']}` | {r['status']} | "
                     f"{'yes' if r['tested'] else ''} | {r['note']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", type=Path, help="write the table as Markdown to this file")
    args = ap.parse_args(argv)
    rows = table()
    if args.markdown:
        args.markdown.write_text(markdown(rows))
    for r in rows:
        print(f"{r['surface']:<20} {r['name']:<36} {r['status']:<14} "
              f"{'tested' if r['tested'] else ''}")
    for k, v in summary(rows).items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
