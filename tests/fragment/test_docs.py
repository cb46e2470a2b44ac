"""docs/distributed.md runs: each ```python block in a temporary directory (blocks use
relative dataset paths). Blocks that start worker processes (``if __name__ ==
"__main__":``, as multiprocessing's spawn and Dask need) run as scripts in a fresh
process; the others run in this one (saving an interpreter start each)."""

import os
import re
import subprocess
import sys

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "distributed.md")


def _blocks() -> list[str]:
    with open(DOC, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), flags=re.S | re.M)


def test_the_page_has_its_examples():
    blocks = _blocks()
    assert len(blocks) >= 4
    assert any("dask.distributed" in b for b in blocks)
    assert any("multiprocessing" in b for b in blocks)


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_doc_block_runs(index, tmp_path, monkeypatch):
    block = _blocks()[index]
    if "dask" in block:
        pytest.importorskip("distributed", reason="needs dask[distributed] (dev extras)")
    if "__main__" not in block:
        monkeypatch.chdir(tmp_path)
        exec(compile(block, f"docs/distributed.md, block {index}", "exec"),
             {"__name__": f"distributed_md_{index}"})
        return
    script = tmp_path / f"block{index}.py"
    script.write_text(block, encoding="utf-8")
    # the child imports lancenb the way the test run does (an editable install, or
    # the source tree on PYTHONPATH)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), root) if p))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"block {index} failed:\n{block}\n{done.stderr[-3000:]}"
