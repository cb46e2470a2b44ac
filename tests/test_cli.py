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
    p = subprocess.run([sys.executable, "-m", "lancenb.tools.cli", *args], capture_output=True,
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
    from lancenb.tools.cli import main

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


# -- bad input: one line naming what is wrong, a non-zero status, never a traceback ------
def _refused(*args, status=1, env=None):
    """Run a command that must fail: its status, stderr without a traceback and (for a
    refused input, status 1) a single line; returns stderr."""
    p = subprocess.run([sys.executable, "-m", "lancenb.tools.cli", *args], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == status, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr + p.stdout
    if status == 1:
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert p.stdout == ""
    return p.stderr


@pytest.fixture
def junk(tmp_path):
    """A missing path, an empty directory, a directory of text, a short text file, a
    3 kB file of random bytes and a Lance file whose footer offsets are damaged."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("hello")
    (tmp_path / "short.lance").write_text("hello,world\n")
    (tmp_path / "random.lance").write_bytes(np.random.default_rng(3).bytes(3000))
    damaged = tmp_path / "damaged.lance"
    with lancenb.LanceFileWriter(str(damaged)) as w:
        w.write_batch(pa.table({"x": np.arange(1000)}))
    raw = bytearray(damaged.read_bytes())
    raw[-40:-8] = b"\xff" * 32  # every offset and count of the footer
    damaged.write_bytes(bytes(raw))
    return {k: str(tmp_path / k) for k in
            ("missing", "empty", "notes", "short.lance", "random.lance", "damaged.lance")}


def test_warmup_process_count_under_one():
    assert "InvalidInputError: processes must be at least 1, not 0" in \
        _refused("warmup", "--processes", "0")


def test_version_flag():
    p = _run("--version")
    assert p.stdout.strip() == f"lancenb {lancenb.__version__}"


def test_no_command_is_a_usage_error():
    assert "required: command" in _refused(status=2)


@pytest.mark.parametrize("cmd", ["inspect", "validate"])
def test_missing_path(cmd, junk):
    err = _refused(cmd, junk["missing"])
    assert f"lancenb {cmd}: LanceFileNotFoundError: no such file or directory: " \
           f"{junk['missing']!r}" in err


@pytest.mark.parametrize("cmd", ["inspect", "validate"])
@pytest.mark.parametrize("what", ["empty", "notes"])
def test_directory_that_is_not_a_dataset(cmd, what, junk):
    err = _refused(cmd, junk[what])
    assert f"{junk[what]!r} is a directory, but not a Lance dataset (no _versions/ in it) " \
           f"nor a Lance file" in err
    assert "Errno" not in err


@pytest.mark.parametrize("cmd", ["inspect", "validate"])
def test_file_too_small_for_lance(cmd, junk):
    err = _refused(cmd, junk["short.lance"])
    assert f"file {junk['short.lance']!r}: 12 bytes is too small to be a Lance file" in err


@pytest.mark.parametrize("cmd", ["inspect", "validate"])
def test_file_that_is_not_lance(cmd, junk):
    err = _refused(cmd, junk["random.lance"])
    assert f"file {junk['random.lance']!r}: not a Lance file (magic" in err
    assert "0 manifests" not in err


def test_inspect_damaged_footer(junk):
    err = _refused("inspect", junk["damaged.lance"])
    assert "CorruptFileError" in err and junk["damaged.lance"] in err


def test_validate_damaged_footer_reports_the_problem(junk):
    p = _run("validate", junk["damaged.lance"], ok=False)
    assert p.returncode == 1 and "Traceback" not in p.stderr + p.stdout
    assert f"PROBLEM {junk['damaged.lance']}" in p.stdout and "1 problem(s)" in p.stdout


def test_convert_missing_source(junk, tmp_path):
    err = _refused("convert", junk["missing"] + ".parquet", str(tmp_path / "out"))
    assert f"no such file or directory: {junk['missing'] + '.parquet'!r}" in err
    assert not (tmp_path / "out").exists()


def test_convert_empty_directory(junk, tmp_path):
    err = _refused("convert", junk["empty"], str(tmp_path / "out"))
    assert f"{junk['empty']!r} is an empty directory: neither a Lance dataset" in err


@pytest.mark.parametrize("name,fmt", [("x.parquet", "parquet"), ("x.arrow", "ipc"),
                                      ("x.feather", "ipc")])
def test_convert_source_not_in_its_format(name, fmt, tmp_path):
    (tmp_path / name).write_bytes(b"not a table at all")
    err = _refused("convert", str(tmp_path / name), str(tmp_path / "out"))
    assert f"cannot read {str(tmp_path / name)!r} as {fmt} (from its name; or pass " \
           f"--format)" in err


def test_convert_unknown_extension(tmp_path):
    (tmp_path / "x.bin").write_bytes(b"1,2\n")
    err = _refused("convert", str(tmp_path / "x.bin"), str(tmp_path / "out"))
    assert "cannot tell the format of" in err and "pass --format" in err


def test_convert_lance_file_is_not_a_dataset(junk, tmp_path):
    err = _refused("convert", junk["short.lance"], str(tmp_path / "out"))
    assert f"DatasetNotFoundError: no Lance dataset at {junk['short.lance']!r}" in err


def test_convert_damaged_parquet_leaves_no_output(tmp_path):
    src = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": np.arange(100_000)}), src)
    raw = bytearray(src.read_bytes())
    raw[4:60] = b"\xff" * 56  # the first page header
    src.write_bytes(bytes(raw))
    for dst in ("out.parquet", "out.lance"):
        err = _refused("convert", str(src), str(tmp_path / dst), "--quiet")
        assert f"reading {str(src)!r} failed after 0 rows" in err
    assert not (tmp_path / "out.parquet").exists()  # no half-written file
    assert not (tmp_path / "out.lance" / "_versions").exists()  # nothing committed


def test_convert_destination_is_a_file(tmp_path, table):
    pq.write_table(table, tmp_path / "in.parquet")
    (tmp_path / "dst").write_text("keep me")
    err = _refused("convert", str(tmp_path / "in.parquet"), str(tmp_path / "dst"))
    assert f"{str(tmp_path / 'dst')!r} is a file: the destination is a dataset directory" in err
    assert (tmp_path / "dst").read_text() == "keep me"


def test_convert_unknown_storage_version(tmp_path, table):
    pq.write_table(table, tmp_path / "in.parquet")
    err = _refused("convert", str(tmp_path / "in.parquet"), str(tmp_path / "o"),
                   "--data-storage-version", "9.9")
    assert "unknown file version '9.9'" in err


@pytest.mark.parametrize("cmd", ["compact"])
@pytest.mark.parametrize("what", ["missing", "empty", "short.lance"])
def test_compact_not_a_dataset(cmd, what, junk):
    err = _refused(cmd, junk[what])
    assert f"DatasetNotFoundError: no Lance dataset at {junk[what]!r}" in err


@pytest.mark.parametrize("args,needle", [
    (("convert", "a.csv", "b", "--batch-rows", "0"), "--batch-rows: expected a positive"),
    (("convert", "a.csv", "b", "--max-rows-per-file", "-3"), "--max-rows-per-file: expected"),
    (("convert", "a.csv", "b", "--mode", "bogus"), "invalid choice: 'bogus'"),
    (("convert", "a.csv"), "required: dst"),
    (("inspect", "x", "--version", "0"), "--version: expected a positive integer, not '0'"),
    (("compact", "x", "--target-rows-per-fragment", "x"), "expected a positive integer"),
    (("warmup", "--processes", "x"), "--processes: invalid int value: 'x'"),
    (("demo", "--rows", "-1"), "--rows: expected a positive integer"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_bad_options_are_usage_errors(args, needle):
    assert needle in _refused(*args, status=2)


@pytest.mark.parametrize("how", ["env", "flag before", "flag after"])
def test_debug_shows_the_traceback(how, junk):
    env = dict(os.environ)
    args = ["inspect", junk["empty"]]
    if how == "env":
        env["LANCENB_DEBUG"] = "1"
    elif how == "flag before":
        args.insert(0, "--debug")
    else:
        args.append("--debug")
    p = subprocess.run([sys.executable, "-m", "lancenb.tools.cli", *args], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 1
    assert "Traceback" in p.stderr and "InvalidInputError" in p.stderr


def test_inspect_version_the_dataset_does_not_have(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": [1, 2]}), uri)
    lance.write_dataset(pa.table({"x": [3]}), uri, mode="append")
    err = _refused("inspect", uri, "--version", "9")
    assert f"DatasetNotFoundError: dataset {uri!r} has no version 9 (versions: 1-2)" in err


def test_inspect_unreadable_manifest_names_why(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": [1, 2]}), uri)
    (manifest,) = (tmp_path / "ds" / "_versions").glob("*.manifest")
    manifest.write_bytes(b"garbage")
    err = _refused("inspect", uri)
    assert f"dataset {uri!r}: version 1 cannot be read: manifest" in err
    assert "does not end with the 'LANC' magic" in err


def test_convert_damaged_lance_dataset(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"x": np.arange(1000)}), uri)
    (data,) = (tmp_path / "ds" / "data").glob("*.lance")
    raw = bytearray(data.read_bytes())
    raw[:-40] = b"\xff" * (len(raw) - 40)  # everything but the footer
    data.write_bytes(bytes(raw))
    err = _refused("convert", uri, str(tmp_path / "out.parquet"), "--quiet")
    assert "lancenb convert: CorruptFileError: file " in err and data.name in err
    assert not (tmp_path / "out.parquet").exists()
