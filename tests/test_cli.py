"""The ``lancenb`` command line, run as a subprocess on real files (``demo`` is only
checked for its help: it starts Spark and takes about a minute)."""

import json
import os
import subprocess
import sys

import lance
import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import lancenb


def _run(*args, ok=True):
    p = subprocess.run([sys.executable, "-m", "lancenb.cli", *args], capture_output=True,
                       text=True, timeout=120)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(1)
    n = 5000
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "f": pa.array(rng.standard_normal(n), mask=rng.random(n) < 0.1),
        "s": pa.array([f"name {i % 37}" for i in range(n)]),
        "ts": pa.array(np.arange(n) * 1000, pa.timestamp("ms")),
        "l": pa.array([[i, i * 2] if i % 4 else [] for i in range(n)], pa.list_(pa.int32())),
    })


def test_convert_parquet_round_trip_exact(tmp_path, table):
    src, mid, back = tmp_path / "in.parquet", tmp_path / "mid.lance", tmp_path / "back.parquet"
    pq.write_table(table, src, row_group_size=1000)
    p = _run("convert", str(src), str(mid), "--max-rows-per-file", "2000",
             "--batch-rows", "700")
    assert "converted: 5,000 rows (100%)" in p.stderr
    ds = lancenb.dataset(str(mid))
    assert len(ds.get_fragments()) == 3
    assert ds.data_storage_version == "2.2"  # the default, as pylance 14
    assert lance.dataset(str(mid)).to_table().equals(table)
    _run("convert", str(mid), str(back), "--quiet")
    got = pq.read_table(back)
    assert got.equals(table) and got.schema.equals(table.schema, check_metadata=False)
    # append, then 2.2 files on overwrite
    _run("convert", str(src), str(mid), "--mode", "append", "--quiet")
    assert lancenb.dataset(str(mid)).count_rows() == 10_000
    _run("convert", str(src), str(mid), "--mode", "overwrite", "--data-storage-version", "2.2")
    assert lancenb.dataset(str(mid)).data_storage_version == "2.2"
    p = _run("convert", str(src), str(mid), ok=False)  # mode create: exists
    assert p.returncode == 1 and "DatasetExistsError" in p.stderr


def test_convert_csv_and_ipc(tmp_path, table):
    flat = table.drop_columns(["l"])
    pcsv.write_csv(flat, tmp_path / "in.csv")
    with ipc.new_file(str(tmp_path / "in.arrow"), table.schema) as w:
        w.write_table(table, max_chunksize=999)
    _run("convert", str(tmp_path / "in.csv"), str(tmp_path / "a.lance"), "--quiet")
    got = lancenb.dataset(str(tmp_path / "a.lance")).to_table()
    assert got.num_rows == 5000
    assert got.column("s").combine_chunks().equals(flat.column("s").combine_chunks())
    _run("convert", str(tmp_path / "in.arrow"), str(tmp_path / "b.lance"), "--quiet")
    assert lancenb.dataset(str(tmp_path / "b.lance")).to_table().equals(table)


def test_inspect_and_validate(tmp_path, table):
    uri = str(tmp_path / "ds.lance")
    lancenb.write_dataset(table, uri, max_rows_per_file=2500)
    ds = lancenb.dataset(uri)
    ds.delete("id < 10")
    p = _run("inspect", uri)
    assert "version 2 of 2, 4,990 rows in 2 fragments" in p.stdout
    assert "delete" in p.stdout and "ARROW_ARRAY" in p.stdout
    r = json.loads(_run("inspect", uri, "--json", "--files").stdout)
    f = r["fragments"][0]["files"][0]["inspect"]
    assert all(pg["explanation"]["reproduced"] for c in f["columns"] for pg in c["pages"])
    data0 = os.path.join(uri, "data", r["fragments"][0]["files"][0]["path"])
    p = _run("inspect", data0)
    assert "why (lancenb's strategy" in p.stdout and "try_dictionary" in p.stdout
    assert "mini_block:" in p.stdout
    p = _run("validate", uri)
    assert p.stdout.rstrip().endswith("OK")
    s_page = f["columns"][2]["pages"][0]["buffers"][0]["position"]  # "s": chunk metadata
    with open(data0, "r+b") as fh:
        fh.seek(s_page)
        fh.write(b"\xff" * 4)
    p = _run("validate", uri, ok=False)
    assert p.returncode == 1
    assert f"[column s, page 0, offset {s_page}]" in p.stdout and "1 problem(s)" in p.stdout
    r = json.loads(_run("validate", uri, "--json", ok=False).stdout)
    assert r["problems"][0]["column"] == "s"
    p = _run("inspect", str(tmp_path / "nothing"), ok=False)
    assert p.returncode == 1 and "lancenb inspect:" in p.stderr


def test_demo_is_still_a_command():
    p = _run("demo", "--help")
    assert "--rows" in p.stdout


def _run_on_terminal(*args, monkeypatch) -> str:
    """Run the CLI in this process with stderr a terminal-like stream; returns what it
    wrote there (a subprocess on a pseudo-terminal would do the same, at the price of
    a second start-up)."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    from lancenb.cli import main

    assert main(list(args)) == 0
    return err.getvalue()


def test_progress_bars_on_a_terminal_only(tmp_path, table, monkeypatch):
    """compact and convert draw a bar when stderr is a terminal (the convert tests
    above check the plain lines written to a pipe). lancenb's own bar: tqdm, which
    draws it instead when installed (the dev extras pull it in), is hidden."""
    monkeypatch.setitem(sys.modules, "tqdm", None)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(table, uri, max_rows_per_file=500)
    lancenb.dataset(uri).delete("id % 10 = 0")
    err = _run_on_terminal("compact", uri, monkeypatch=monkeypatch)
    assert "compacting [" in err and "100%" in err and "4,500/4,500 rows" in err
    assert "compacted: 10 fragments into 1" in err
    ds = lancenb.dataset(uri)
    assert len(ds.get_fragments()) == 1 and ds.count_rows() == 4500
    assert lance.dataset(uri).to_table().column("id").to_pylist() == \
        [i for i in range(5000) if i % 10]
    src = tmp_path / "in.parquet"
    pq.write_table(table, src, row_group_size=1000)
    err = _run_on_terminal("convert", str(src), str(tmp_path / "out"), "--batch-rows", "500",
                           monkeypatch=monkeypatch)
    assert "converting [" in err and "5,000/5,000 rows" in err
    assert "converted: 5,000 rows (100%)" in err


def test_progress_bar_module():
    import io

    from lancenb.progress import ProgressBar, progress_bar

    buf = io.StringIO()
    bar = ProgressBar("work", 200, stream=buf)
    bar.update(50)
    bar.close()
    assert buf.getvalue().startswith("\rwork [#######.......................]  25% 50/200 rows")
    assert buf.getvalue().endswith("\n")
    off = progress_bar("work", 10, enabled=False)  # (not a terminal: nothing drawn)
    off.update(5)
    off.close()
