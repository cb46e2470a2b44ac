"""Every ```python block of README.md and docs/*.md runs as written.

The blocks of one file run in order in one namespace (later blocks use what earlier
ones made), in a temporary directory, with ``/tmp/`` paths moved into it. A block
preceded by ``<!-- docs-test: skip -->`` needs a service or data the docs do not
build (S3 credentials, a Spark session, a Dask client) and is only compiled, as are
the blocks of docs/spark.md; blocks of ``>>>`` examples show output and are skipped.
``docs/distributed.md`` has its own runner (tests/fragment/test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN_RUNNER = {"distributed.md"}
BLOCK = re.compile(r"(<!-- docs-test: skip -->\s*\n)?```python\n(.*?)```", re.DOTALL)
# documents whose blocks need a running Spark session, its DataFrames and paths:
# compiled only (the Spark data source itself is tested in tests/spark/)
COMPILE_ONLY = {"spark.md"}


def blocks(path: Path) -> list[tuple[bool, str]]:
    """``[(skip, code)]`` of the python blocks of one document, in order."""
    return [(bool(m.group(1)), m.group(2)) for m in BLOCK.finditer(path.read_text())]


DOCS = [p for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        if p.name not in OWN_RUNNER and blocks(p)]


@pytest.mark.parametrize("doc", DOCS, ids=[p.name for p in DOCS])
def test_python_blocks_run(doc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": f"docs_{doc.stem}"}
    ran = 0
    for i, (skip, code) in enumerate(blocks(doc)):
        code = code.replace("/tmp/", f"{tmp_path}/")
        if code.lstrip().startswith(">>>"):
            continue
        compile(code, f"{doc.name}[{i}]", "exec")  # every block at least parses
        if skip or doc.name in COMPILE_ONLY:
            continue
        exec(compile(code, f"{doc.name}[{i}]", "exec"), ns)  # noqa: S102
        ran += 1
    assert ran or doc.name in COMPILE_ONLY or doc.name == "cli.md"
