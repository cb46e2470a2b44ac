"""Type checkers see lancenb's public API (issue 31): the README's Python examples
pass pyright (basic) and mypy with ``import lancenb as lance``, and the names the
package root imports lazily have their real types (``lance.dataset(...)`` is a
``LanceDataset``), not ``Any``.

Each README block becomes a function after a prelude that declares the names the
blocks use without defining them (a dataset ``ds``, a table, a Spark DataFrame...).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRELUDE = '''\
from typing import Any
import datetime
import io
import pyarrow as pa
import lancenb
import lancenb as lance

ds: lance.LanceDataset = lance.dataset("/tmp/x.lance")
table: pa.Table = pa.table({"id": [1]})
df: Any = None
part: Any = None
uri: str = "/tmp/x.lance"
all_frags: list = []
client: Any = None
'''
REVEAL = '''
reveal_type(lance.dataset("/tmp/x.lance"))
reveal_type(lance.write_dataset(table, "/tmp/y.lance"))
reveal_type(lance.LanceFileReader)
'''


def _program(tmp_path: Path) -> Path:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) >= 5, "the README's examples were not found"
    body = [PRELUDE]
    for i, block in enumerate(blocks):
        lines = "\n".join("    " + ln if ln.strip() else "" for ln in block.splitlines())
        # (a block continues the README's story: the names of the prelude are shared)
        body.append(f"\ndef _readme_block_{i}() -> None:\n    global ds, table\n{lines}\n"
                    f"    pass\n")
    path = tmp_path / "readme_examples.py"
    path.write_text("\n".join(body) + REVEAL)
    return path


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if exe.exists():
        return str(exe)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the dev extra pins it)")
    return found


def test_readme_examples_pass_mypy(tmp_path):
    prog = _program(tmp_path)
    out = subprocess.run(
        [_tool("mypy"), "--follow-imports=silent", "--ignore-missing-imports",
         "--no-error-summary", "--cache-dir", str(tmp_path / ".mypy"), str(prog)],
        capture_output=True, text=True, cwd=tmp_path, env={"MYPYPATH": str(ROOT),
                                                           "PATH": "/usr/bin:/bin"})
    lines = out.stdout.splitlines()
    errors = [ln for ln in lines if ": error:" in ln]
    assert not errors, "\n".join(errors)
    revealed = [ln.split("Revealed type is ")[1] for ln in lines if "Revealed type" in ln]
    assert revealed[:2] == ['"lancenb.dataset.lance_dataset.LanceDataset"'] * 2, lines
    assert "LanceFileReader" in revealed[2]


def test_readme_examples_pass_pyright(tmp_path):
    prog = _program(tmp_path)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(
        {"typeCheckingMode": "basic", "extraPaths": [str(ROOT)]}))
    try:
        out = subprocess.run([_tool("pyright"), "--outputjson", "--pythonpath", sys.executable,
                              str(prog)], capture_output=True,
                             text=True, cwd=tmp_path, timeout=600)
    except subprocess.TimeoutExpired:
        pytest.fail("pyright did not finish in 10 minutes")
    if not out.stdout.lstrip().startswith("{"):
        pytest.skip(f"pyright could not start (it fetches Node.js on first use): "
                    f"{(out.stdout + out.stderr)[-300:]}")
    report = json.loads(out.stdout)
    diags = report["generalDiagnostics"]
    # pyarrow.compute's functions are made at import time: no checker sees them
    errors = [f"{d['range']['start']['line'] + 1}: {d['message']}" for d in diags
              if d["severity"] == "error"
              and 'is not a known attribute of module "pyarrow.compute"' not in d["message"]]
    assert not errors, "\n".join(errors)
    revealed = [d["message"] for d in diags if d["severity"] == "information"]
    assert revealed[0].endswith('"LanceDataset"') and revealed[1].endswith('"LanceDataset"'), \
        revealed
