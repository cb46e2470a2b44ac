"""pylance's public modules under lancenb's names: lancenb.log, .debug, .progress,
.arrow, .util, .vector, .optimize, .commit, .schema, ._dataset, and the module-level
names of lancenb.file and lancenb.dataset. Each is compared with pylance (the oracle)
where the behaviour is comparable: same data, written by one library, read by both.
"""

import ast
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import lance  # pylance: the oracle
import numpy as np
import pyarrow as pa
import pytest

# before lancenb.arrow: both register lance.bfloat16. pylance's lance.arrow needs pandas
# (dev extras, no lancenb dependency: make test-oldest has none, and the module skips there)
pytest.importorskip("lance.arrow", exc_type=ImportError)

import lancenb  # noqa: E402
import lancenb.arrow as nb_arrow  # noqa: E402
from lancenb import debug as nb_debug  # noqa: E402
from lancenb import log as nb_log  # noqa: E402
from lancenb.vector import vec_to_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


# -- lancenb.log ---------------------------------------------------------------------
@pytest.mark.parametrize("value", ["DEBUG", "info", "trace", "", "warning,lance=debug",
                                   "lance-core=debug,ERROR", "a=b", "Warning,DEBUG"])
def test_log_level_from_env_as_pylance(monkeypatch, value):
    from lance.log import get_log_level as pylance_level

    monkeypatch.setenv("LANCE_LOG", value)
    assert nb_log.get_log_level() == pylance_level().upper()


def test_log_level_unset(monkeypatch):
    monkeypatch.delenv("LANCE_LOG", raising=False)
    assert nb_log.get_log_level() == "INFO"
    assert nb_log.ENV_NAME_PYLANCE_LOGGING_LEVEL == "LANCE_LOG"


def test_set_logger_rebinds_logger(tmp_path):
    logger = nb_log.set_logger(file_path=str(tmp_path / "x.log"), name="lancenb.test_h7",
                               level=logging.DEBUG, format_string="%(levelname)s %(message)s")
    try:
        assert nb_log.LOGGER is logger and logger.level == logging.DEBUG
        logger.debug("hello")
        logger.handlers[-1].flush()
        assert (tmp_path / "x.log").read_text() == "DEBUG hello\n"
        assert lancenb.set_logger is nb_log.set_logger
    finally:
        for h in list(logger.handlers):
            logger.removeHandler(h)
            h.close()
        nb_log.LOGGER = logging.getLogger("lancenb")


@pytest.mark.parametrize("precision, digits", [("s", 0), ("ms", 3), ("us", 6), ("ns", 9)])
def test_configure_from_env_timestamp(tmp_path, precision, digits):
    path = tmp_path / "deep" / "lancenb.log"
    handler = nb_log.configure_from_env({"LANCE_LOG": "debug", "LANCE_LOG_FILE": str(path),
                                         "LANCE_LOG_TS_PRECISION": precision})
    try:
        logging.getLogger("lancenb.commit").debug("committed %d", 7)
        handler.flush()
        line = path.read_text().splitlines()[0]
        frac = rf"\.\d{{{digits}}}" if digits else ""
        import re
        assert re.fullmatch(rf"\[\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d{frac}Z DEBUG "
                            rf"lancenb\.commit\] committed 7", line), line
    finally:
        nb_log.LOGGER.removeHandler(handler)
        handler.close()
        nb_log.LOGGER.setLevel(nb_log.get_log_level())


def test_lance_log_env_at_import(tmp_path):
    """LANCE_LOG set when lancenb is imported: its commits are logged to the file."""
    log_file = tmp_path / "logs" / "lancenb.log"
    code = ("import lancenb, pyarrow as pa; "
            f"lancenb.write_dataset(pa.table({{'x': [1, 2]}}), {str(tmp_path / 'ds')!r})")
    env = {**os.environ, "LANCE_LOG": "debug", "LANCE_LOG_FILE": str(log_file)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert "committed version 1" in log_file.read_text()
    assert "DEBUG" not in out.stderr and "INFO" not in out.stderr


def test_lance_log_unwritable_file_falls_back(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    env = {"LANCE_LOG": "info", "LANCE_LOG_FILE": str(blocker / "sub" / "x.log")}
    handler = nb_log.configure_from_env(env)
    try:
        assert isinstance(handler, logging.StreamHandler)
        assert not isinstance(handler, logging.FileHandler)
    finally:
        nb_log.LOGGER.removeHandler(handler)
        nb_log.LOGGER.setLevel(nb_log.get_log_level())


# -- lancenb.debug -------------------------------------------------------------------
@pytest.fixture
def pylance_dataset(tmp_path):
    """Written by pylance: metadata both libraries print from the same manifest."""
    uri = tmp_path / "ds"
    tbl = pa.table({"x": range(10), "s": pa.array([{"a": 1, "b": "t"}] * 10),
                    "v": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(20, "f4")), 2)})
    ds = lance.write_dataset(tbl, uri)
    ds = lance.write_dataset(tbl, uri, mode="append")
    ds.delete("x = 5")
    ds.update({"x": "1"}, where="x = 2")
    return uri


def test_debug_schema_and_fragment_equal_pylance(pylance_dataset):
    from lance import debug as pl_debug

    ours, theirs = lancenb.dataset(pylance_dataset), lance.dataset(pylance_dataset)
    assert nb_debug.format_schema(ours) == pl_debug.format_schema(theirs)
    for f_ours, f_theirs in zip(ours.get_fragments(), theirs.get_fragments()):
        assert nb_debug.format_fragment(f_ours.metadata, ours) == \
            pl_debug.format_fragment(f_theirs.metadata, theirs)


def test_debug_manifest_equal_pylance(pylance_dataset):
    from lance import debug as pl_debug

    ours = nb_debug.format_manifest(lancenb.dataset(pylance_dataset))
    theirs = pl_debug.format_manifest(lance.dataset(pylance_dataset))
    assert ours == theirs


def test_list_transactions_outline(pylance_dataset, tmp_path):
    from lance import debug as pl_debug

    ours = nb_debug.list_transactions(lancenb.dataset(pylance_dataset))
    theirs = pl_debug.list_transactions(lance.dataset(pylance_dataset))

    def outline(text):  # the first lines: the record and its operation's name
        lines = text.splitlines()
        return lines[0], lines[1].split(":")[0], lines[3]

    assert [outline(t) for t in ours] == [outline(t) for t in theirs]
    assert nb_debug.list_transactions(lancenb.dataset(pylance_dataset), 2) == ours[:2]
    # a lancenb dataset: one per version, newest first
    uri = tmp_path / "nb"
    ds = lancenb.write_dataset(pa.table({"x": [1, 2]}), uri)
    ds = lancenb.write_dataset(pa.table({"x": [3]}), uri, mode="append")
    ds.delete("x = 1")
    ops = [t.splitlines()[3].strip() for t in nb_debug.list_transactions(ds)]
    assert ops == ["operation: Delete {", "operation: Append {", "operation: Overwrite {"]


def test_render_rust_debug_notation():
    value = nb_debug.Struct("A", [("s", 'q"\n'), ("o", nb_debug.Tuple("Some", [1.0])),
                                  ("m", {"k": "v"}), ("e", []), ("w", nb_debug.Word("Plain"))])
    assert nb_debug.render(value) == (
        'A {\n    s: "q\\"\\n",\n    o: Some(\n        1.0,\n    ),\n'
        '    m: {\n        "k": "v",\n    },\n    e: [],\n    w: Plain,\n}')


# -- lancenb.progress ----------------------------------------------------------------
def test_fragment_write_progress(tmp_path):
    # (write_dataset calls progress; LanceFragment.create and write_fragments accept it
    # but do not call it yet: lancenb/dataset/write/insert.py)
    from lancenb.progress import FileSystemFragmentWriteProgress, FragmentWriteProgress

    class Count(FragmentWriteProgress):
        def __init__(self):
            self.calls = []

        def begin(self, fragment, **kwargs):
            self.calls.append("begin")

        def complete(self, fragment, **kwargs):
            self.calls.append(("complete", fragment.physical_rows))

    count = Count()
    lancenb.write_dataset(pa.table({"a": range(5)}), tmp_path / "a", progress=count)
    assert count.calls == ["begin", ("complete", 5)]

    progress = FileSystemFragmentWriteProgress(tmp_path / "progress", {"worker": "7"})
    lancenb.write_dataset(pa.table({"a": range(100)}), tmp_path / "b", progress=progress)
    names = sorted(os.listdir(tmp_path / "progress"))
    assert names == ["fragment_0.json"]  # the in-progress marker is gone
    meta = json.loads((tmp_path / "progress" / names[0]).read_text())
    assert meta["id"] == 0 and set(meta) >= {"files", "physical_rows"}
    assert lance.fragment.FragmentMetadata.from_json(json.dumps(meta)).id == 0


def test_progress_files_name_the_data_file_as_pylance(tmp_path):
    """The JSON written at begin names the data file being written (pylance's test of
    its own progress files checks the path against the fragment's)."""
    from lance.progress import FileSystemFragmentWriteProgress as PlProgress

    from lancenb.fragment import LanceFragment
    from lancenb.progress import FileSystemFragmentWriteProgress

    tbl = pa.table({"a": range(100), "s": pa.array([{"x": 1}] * 100)})
    outlines = []
    for lib, cls, create in (("ours", FileSystemFragmentWriteProgress, LanceFragment.create),
                             ("theirs", PlProgress, lance.LanceFragment.create)):
        frag = create(tmp_path / lib / "ds", tbl, fragment_id=3,
                      progress=cls(str(tmp_path / lib / "p"), {"w": "1"}))
        assert sorted(os.listdir(tmp_path / lib / "p")) == ["fragment_3.json"]
        meta = json.loads((tmp_path / lib / "p" / "fragment_3.json").read_text())
        assert [f["path"] for f in meta["files"]] == [f.path for f in frag.files]
        for from_json in (lancenb.fragment.FragmentMetadata.from_json,
                          lance.fragment.FragmentMetadata.from_json):
            back = from_json(json.dumps(meta))  # (rows null: they were not counted yet)
            assert back.physical_rows is None and back.files[0].path == frag.files[0].path
        for f in meta["files"]:
            f.pop("path")
        outlines.append(meta)
    assert outlines[0] == outlines[1]  # the rest equal: no fields, rows null, ...


def test_fragment_write_progress_left_on_failure(tmp_path):
    from lancenb.progress import FileSystemFragmentWriteProgress

    batch = pa.record_batch([pa.array(range(10))], names=["a"])

    def failing():
        yield batch
        raise RuntimeError("worker died")

    progress = FileSystemFragmentWriteProgress(str(tmp_path / "p"), {"k": "v"})
    reader = pa.RecordBatchReader.from_batches(batch.schema, failing())
    with pytest.raises(Exception, match="worker died"):  # noqa: B017 (whatever wraps it)
        lancenb.write_dataset(reader, tmp_path / "ds", progress=progress)
    marker = json.loads((tmp_path / "p" / "fragment_0.in_progress").read_text())
    assert marker == {"fragment_id": 0, "metadata": {"k": "v"}}


def _counting(base):
    class Count(base):
        def __init__(self):
            self.calls = []

        def begin(self, fragment, **kwargs):
            self.calls.append(("begin", fragment.id, fragment.physical_rows,
                               len(fragment.files)))

        def complete(self, fragment, **kwargs):
            self.calls.append(("complete", fragment.id, fragment.physical_rows,
                               len(fragment.files)))

    return Count()


@pytest.mark.parametrize("how", ["create", "create_id", "write_fragments"])
def test_fragment_apis_call_progress_as_pylance(tmp_path, how):
    from lance.progress import FragmentWriteProgress as PlProgress

    from lancenb.fragment import LanceFragment, write_fragments
    from lancenb.progress import FragmentWriteProgress

    tbl = pa.table({"a": range(300)})
    calls = {}
    for lib, base, create, write in (
            ("ours", FragmentWriteProgress, LanceFragment.create, write_fragments),
            ("theirs", PlProgress, lance.LanceFragment.create, lance.fragment.write_fragments)):
        progress, uri = _counting(base), tmp_path / lib
        if how == "create":
            create(uri, tbl, progress=progress)
        elif how == "create_id":
            create(uri, tbl, fragment_id=7, progress=progress)
        else:
            write(tbl, uri, max_rows_per_file=100, progress=progress)
        calls[lib] = progress.calls
    # the same begin calls (LanceFragment.create's name the file, write_fragments' do
    # not, as in pylance); every file completes once (pylance 14 sometimes misses the
    # last complete of write_fragments)
    ours, theirs = ({kind: [c for c in calls[lib] if c[0] == kind]
                     for kind in ("begin", "complete")} for lib in ("ours", "theirs"))
    assert ours["begin"] == theirs["begin"]
    assert len(ours["complete"]) == len(ours["begin"])
    assert set(theirs["complete"]) <= set(ours["complete"])


def test_abstract_progress():
    from lancenb.progress import FragmentWriteProgress, IndexProgress

    with pytest.raises(TypeError):
        FragmentWriteProgress()
    assert IndexProgress("progress", "train", completed=5, total=4).fraction == 1.0
    assert IndexProgress("start", "train").fraction is None


# -- lancenb.vector / lancenb.util ---------------------------------------------------
@pytest.mark.parametrize("data, kwargs", [
    ({"a": [1.5, 2.0], "b": [3.0, 4.25]}, {}),
    ({1: [1, 2, 3]}, {"names": ["key", "emb"]}),
    ([[1, 2], [3, 4], [5, 6]], {}),
    ([[1, 2], [3, 4]], {"names": "v"}),
    (np.arange(12, dtype=np.float64).reshape(4, 3), {}),
    (np.arange(6).reshape(3, 2), {"names": ["w"], "ndim": 2}),
])
def test_vec_to_table_equals_pylance(data, kwargs):
    from lance.vector import vec_to_table as pl_vec_to_table

    assert vec_to_table(data, **kwargs).equals(pl_vec_to_table(data, **kwargs))


def test_vec_to_table_errors():
    with pytest.raises(ValueError, match="3 dimensions but got 2"):
        vec_to_table([[1, 2, 3], [1, 2]])
    with pytest.raises(ValueError, match="2 column names"):
        vec_to_table({"a": [1]}, names=["only"])
    with pytest.raises(NotImplementedError):
        vec_to_table("abc")


def test_util_names():
    from datetime import timedelta

    from lancenb.util import sanitize_ts, td_to_micros, validate_vector_index  # noqa: F401
    assert td_to_micros(timedelta(days=1, microseconds=3)) == 86_400_000_003
    assert sanitize_ts("2024-01-02").year == 2024


# -- lancenb.arrow -------------------------------------------------------------------
def _mixed_floats(n=20000):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n) * np.exp(rng.uniform(-90, 90, n))
    x[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3.4e38, 3.5e38]
    return x


def test_bfloat16_array_bytes_equal_pylance():
    x = _mixed_floats()
    values = [None if i % 7 == 3 else v for i, v in enumerate(x.tolist())]
    ours, theirs = nb_arrow.bfloat16_array(values), lance.arrow.bfloat16_array(values)
    assert ours.storage.equals(theirs.storage)
    assert ours.type.extension_name == theirs.type.extension_name == "lance.bfloat16"


def test_bfloat16_scalar_text_and_order_as_pylance():
    values = [1.124565, 1.1, 3.4, 1.0, -2.5, 1e20, 1e-20, 0.0, -0.0, 65504.0, 3e38]
    for v in values:
        assert str(nb_arrow.BFloat16(v)) == str(lance.arrow.BFloat16(v))
        assert nb_arrow.BFloat16(v).as_float() == lance.arrow.BFloat16(v).as_float()
    a, b = nb_arrow.BFloat16(1.1), nb_arrow.BFloat16(1.0)
    assert a > b and a >= b and b < a and b <= a and a != b and not a == b
    assert nb_arrow.BFloat16(1.1) == nb_arrow.BFloat16(1.1015625)
    arr = nb_arrow.bfloat16_array([1.1, None, 3.4])
    assert arr.to_pylist() == [nb_arrow.BFloat16(1.1), None, nb_arrow.BFloat16(3.4)]
    assert str(arr) == "[\n  1.1015625,\n  None,\n  3.40625\n]"
    assert repr(arr).startswith("<lance.arrow.BFloat16Array object at 0x")
    assert arr[0] == nb_arrow.BFloat16(1.1)


@pytest.mark.parametrize("float_type", [pa.float16(), pa.float32(), pa.float64()])
def test_bfloat16_cast(float_type):
    floats = pa.array([1.0, None, 2.5, -4.0], type=pa.float64()).cast(float_type)
    bf16 = nb_arrow.cast(floats, "bfloat16")
    assert isinstance(bf16, nb_arrow.BFloat16Array)
    assert bf16.to_pylist() == [nb_arrow.BFloat16(1.0), None, nb_arrow.BFloat16(2.5),
                                nb_arrow.BFloat16(-4.0)]
    assert nb_arrow.cast(bf16, float_type).equals(floats)
    fsl = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2.0, 3.0, 4.0], float_type), 2)
    fsl16 = nb_arrow.cast(fsl, pa.list_(nb_arrow.BFloat16Type(), 2))
    assert fsl16.values.storage.equals(nb_arrow.bfloat16_array([1, 2, 3, 4]).storage)
    assert nb_arrow.cast(fsl16, fsl.type).equals(fsl)
    with pytest.raises(ValueError):
        nb_arrow.cast(pa.array(["a"]), "bf16")


def test_bfloat16_numpy_as_pylance():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.1, 2.1, 3.4, -0.0], dtype=ml_dtypes.bfloat16)
    ours = nb_arrow.BFloat16Array.from_numpy(x)
    assert ours.storage.equals(lance.arrow.BFloat16Array.from_numpy(x).storage)
    np.testing.assert_array_equal(ours.to_numpy(), x)
    np.testing.assert_array_equal(ours[1:].to_numpy(), x[1:])
    np.testing.assert_array_equal(nb_arrow.PandasBFloat16Array.from_numpy(x).to_numpy(), x)
    floats = pa.array([1.0, 2.0, 3.5], pa.float32())
    assert nb_arrow.cast(floats, "bf16").storage.equals(
        lance.arrow.cast(floats, "bf16").storage)


def test_bfloat16_pandas():
    arr = nb_arrow.bfloat16_array([1.1, None, 3.4])
    series = arr.to_pandas()
    assert str(series.dtype) == "lance.bfloat16"
    assert series[0] == nb_arrow.BFloat16(1.1) and series[1] is None
    back = pa.array(series)
    assert isinstance(back, nb_arrow.BFloat16Array) and back.storage.equals(arr.storage)


def test_image_arrays(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.bin"
        p.write_bytes(bytes([i]) * (i + 5))
        paths.append(str(p))
    uris = nb_arrow.ImageURIArray.from_uris(paths)
    assert uris.type.extension_name == "lance.arrow.image_uri" and uris.to_pylist() == paths
    assert nb_arrow.ImageArray.from_array(pa.array(paths, pa.large_string())).type \
        .storage_type == pa.large_string()
    encoded = nb_arrow.ImageURIArray.from_uris(["file://" + paths[1], paths[2]]).read_uris()
    assert encoded.type.extension_name == "lance.arrow.encoded_image"
    assert encoded.to_pylist() == [b"\x01" * 6, b"\x02" * 7]
    pixels = np.arange(2 * 2 * 3 * 4, dtype=np.uint8).reshape(2, 2, 3, 4)
    tensors = nb_arrow.ImageArray.from_array(
        pa.FixedShapeTensorArray.from_numpy_ndarray(pixels))
    assert isinstance(tensors, nb_arrow.FixedShapeImageTensorArray)
    assert tensors.type.shape == [2, 3, 4] or tuple(tensors.type.shape) == (2, 3, 4)
    np.testing.assert_array_equal(tensors.to_numpy(), pixels)
    # a custom codec: raw bytes in, the same pixels out
    encoded = tensors.to_encoded(lambda a: pa.array([x.tobytes() for x in a], pa.binary()))
    back = encoded.to_tensor(lambda b: np.stack([np.frombuffer(x, np.uint8).reshape(2, 3, 4)
                                                 for x in b.to_pylist()]))
    np.testing.assert_array_equal(back.to_numpy(), pixels)


def test_image_types_in_a_dataset(tmp_path):
    pixels = np.arange(2 * 8, dtype=np.uint8).reshape(2, 2, 2, 2)
    tbl = pa.table({
        "uri": nb_arrow.ImageURIArray.from_uris(["a.png", "b.png"]),
        "px": nb_arrow.ImageArray.from_array(pa.FixedShapeTensorArray.from_numpy_ndarray(
            pixels))})
    tbl = tbl.append_column("bf16", nb_arrow.bfloat16_array([1.5, None]))
    lancenb.write_dataset(tbl, tmp_path / "ds")
    back = lance.dataset(tmp_path / "ds").to_table()
    assert back.column("uri").type.extension_name == "lance.arrow.image_uri"
    assert back.column("px").combine_chunks().storage.equals(tbl.column("px").chunk(0).storage)
    # lancenb reads the extension types back (they were storage types before); the
    # classes are whichever library registered the names first in this process
    # (pylance, imported first here), so compare names, storage and values
    ours = lancenb.dataset(tmp_path / "ds")

    def outline(t):
        return [(f.name, f.type.extension_name, f.type.storage_type) for f in t.schema]

    assert outline(ours) == outline(tbl)
    for got in (ours.to_table(), ours.take([0, 1])):
        assert outline(got) == outline(tbl)
        assert [c.combine_chunks().storage for c in got.columns] == \
            [c.combine_chunks().storage for c in tbl.columns]
    assert type(ours.to_table().column("px").chunk(0)).__name__ == \
        "FixedShapeImageTensorArray"


# -- lancenb.file / lancenb.dataset names --------------------------------------------
def test_stable_version_and_commit_message_key():
    from lance.dataset import LANCE_COMMIT_MESSAGE_KEY as PL_KEY
    from lance.file import stable_version as pl_stable

    from lancenb.dataset import LANCE_COMMIT_MESSAGE_KEY, AutoCleanupConfig
    from lancenb.file import stable_version

    assert stable_version() == pl_stable()
    assert LANCE_COMMIT_MESSAGE_KEY == PL_KEY
    assert set(AutoCleanupConfig.__annotations__) == {"interval", "older_than_seconds"}


def test_commit_message_key_is_where_the_message_is(tmp_path):
    from lancenb.dataset import LANCE_COMMIT_MESSAGE_KEY

    ds = lancenb.write_dataset(pa.table({"x": [1]}), tmp_path / "d", commit_message="first")
    assert lance.dataset(tmp_path / "d").read_transaction(ds.version) \
        .transaction_properties[LANCE_COMMIT_MESSAGE_KEY] == "first"


def test_column_ordering_as_pylance(tmp_path):
    from lance.dataset import ColumnOrdering as PlOrdering

    from lancenb.dataset import ColumnOrdering

    tbl = pa.table({"a": [3, None, 1, 2, None], "b": ["x", "y", "z", "x", "w"]})
    lance.write_dataset(tbl, tmp_path / "d")
    ours, theirs = lancenb.dataset(tmp_path / "d"), lance.dataset(tmp_path / "d")
    for args in [("a",), ("a", False), ("a", True, True), ("b", False, True)]:
        assert ours.to_table(order_by=[ColumnOrdering(*args)]) == \
            theirs.to_table(order_by=[PlOrdering(*args)])
    assert ours.scanner(order_by=["b", ColumnOrdering("a", False)]).to_table() == \
        theirs.scanner(order_by=["b", PlOrdering("a", False)]).to_table()
    assert repr(ColumnOrdering("a")) == repr(PlOrdering("a"))


def test_file_session_both_ways(tmp_path):
    from lance.file import LanceFileSession as PlSession

    from lancenb.file import LanceFileSession

    ours, theirs = LanceFileSession(tmp_path), PlSession(str(tmp_path))
    tbl = pa.table({"a": [1, 2, 3], "s": ["x", None, "z"]})
    with ours.open_writer("sub/ours.lance", version="2.1") as w:
        w.write_batch(tbl)
    with theirs.open_writer("theirs.lance") as w:
        w.write_batch(tbl)
    for name in ("sub/ours.lance", "theirs.lance"):
        assert ours.open_reader(name).read_all().to_table() == tbl
        assert theirs.open_reader(name).read_all().to_table() == tbl
        assert ours.open_reader(name, columns=["s"]).read_all().to_table() == tbl.select(["s"])
    assert sorted(ours.list()) == sorted(theirs.list())
    assert ours.list("sub") == sorted(theirs.list("sub"))
    assert ours.contains("theirs.lance") and not ours.contains("nope.lance")
    with pytest.raises(ValueError):
        ours.open_reader("../outside.lance")


def test_file_session_objects(tmp_path):
    from lance.file import LanceFileSession as PlSession

    from lancenb.file import LanceFileSession

    ours, theirs = LanceFileSession(tmp_path / "base"), PlSession(str(tmp_path / "base"))
    src = tmp_path / "src.bin"
    src.write_bytes(bytes(range(200)))
    ours.upload_file(src, "x/y/a.bin")
    theirs.upload_file(src, "b.bin")
    for session in (ours, theirs):
        assert session.read_range("x/y/a.bin", 10, 5) == bytes(range(10, 15))
        assert session.read_range("b.bin", 0, 3) == bytes([0, 1, 2])
    for path in (None, "x", "x/y"):
        a, b = ours.list_with_delimiter(path), theirs.list_with_delimiter(path)
        assert (a.common_prefixes, sorted(a.objects)) == (b.common_prefixes, sorted(b.objects))
    ours.download_file("b.bin", tmp_path / "down.bin")
    assert (tmp_path / "down.bin").read_bytes() == src.read_bytes()
    ours.delete_file("b.bin")
    assert not theirs.contains("b.bin")
    for call in (lambda: ours.delete_file("b.bin"), lambda: ours.read_range("no", 0, 1)):
        with pytest.raises(OSError):
            call()


def test_commit_and_schema_modules(tmp_path):
    from lancenb.commit import CommitConflictError
    from lancenb.errors import CommitConflictError as Home
    from lancenb.schema import LanceSchema, json_to_schema, schema_to_json

    assert CommitConflictError is Home
    schema = pa.schema([("a", pa.int32()), ("s", pa.struct([("b", pa.string())]))])
    assert json_to_schema(schema_to_json(schema)) == schema
    ds = lancenb.write_dataset(pa.table({"a": [1]}), tmp_path / "d")
    assert isinstance(ds.lance_schema, LanceSchema)


# -- lancenb._dataset ----------------------------------------------------------------
@pytest.mark.parametrize("rank, world, kwargs", [
    (1, 3, {"batch_size": 40}), (0, 2, {}), (2, 3, {"batch_size": 70, "granularity": "batch"}),
    (0, 4, {"batch_size": 33, "granularity": "batch"}), (1, 2, {"with_row_id": True})])
def test_sharded_batch_iterator_as_pylance(tmp_path, rank, world, kwargs):
    from lance._dataset.sharded_batch_iterator import ShardedBatchIterator as Pylance

    from lancenb._dataset.sharded_batch_iterator import ShardedBatchIterator

    lance.write_dataset(pa.table({"a": range(1000), "b": [str(i) for i in range(1000)]}),
                        tmp_path / "d", max_rows_per_file=150)
    with pytest.warns(UserWarning, match="deprecated"):
        ours = list(ShardedBatchIterator(tmp_path / "d", rank, world, columns=["a"], **kwargs))
    with pytest.warns(UserWarning):
        theirs = list(Pylance(lance.dataset(tmp_path / "d"), rank, world, columns=["a"],
                              **kwargs))
    assert [b.num_rows for b in ours] == [b.num_rows for b in theirs]
    assert pa.Table.from_batches(ours) == pa.Table.from_batches(theirs)


def test_sharded_batch_iterator_errors(tmp_path):
    from lancenb._dataset.sharded_batch_iterator import ShardedBatchIterator

    ds = lancenb.write_dataset(pa.table({"a": range(10)}), tmp_path / "d")
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="granularity"):
        ShardedBatchIterator(ds, 0, 1, granularity="rows")
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="rank 2"):
        ShardedBatchIterator(ds, 2, 2)
    with pytest.warns(UserWarning):
        it = ShardedBatchIterator(ds, 0, 1, granularity="batch", with_row_id=True)
    with pytest.raises(NotImplementedError):
        list(it)


# -- lancenb itself ------------------------------------------------------------------
def _type_checking_names():
    tree = ast.parse((ROOT / "lancenb" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and getattr(n.test, "id", None) == "TYPE_CHECKING")
    return {a.asname or a.name: (imp.module, a.name) for imp in block.body
            for a in imp.names}


def test_type_checking_block_mirrors_lazy_table():
    seen = _type_checking_names()
    lazy = {name: (mod if attr is not None else mod.rpartition(".")[0],
                   attr if attr is not None else mod.rpartition(".")[2])
            for name, (mod, attr) in lancenb._LAZY.items()}
    assert seen == lazy


def test_import_stays_cheap():
    code = ("import sys, lancenb; heavy = [m for m in ('pyarrow', 'pandas', 'numba', "
            "'lancenb.dataset', 'lancenb.log', 'logging') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items()
                                          if k != "LANCE_LOG"})
    assert out.stdout.strip() == "[]"


def test_log_and_progress_stay_light():
    """The CLI imports lancenb.progress first thing, and LANCE_LOG makes import lancenb
    load lancenb.log: neither may pull in pyarrow or the dataset layer."""
    code = ("import sys, lancenb.progress, lancenb.log; print([m for m in ('pyarrow', "
            "'numba', 'lancenb.dataset', 'lancenb.io') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", ["log", "debug", "progress", "arrow", "util", "vector",
                                    "optimize", "commit", "schema", "file", "fragment"])
def test_modules_reachable_as_attributes(module):
    assert getattr(lancenb, module).__name__ == f"lancenb.{module}"


@pytest.mark.parametrize("name", ["lancenb.log", "lancenb.debug", "lancenb.progress",
                                  "lancenb.arrow", "lancenb._arrow.images", "lancenb.util",
                                  "lancenb.vector", "lancenb.optimize", "lancenb.commit",
                                  "lancenb.schema", "lancenb.file.session", "lancenb._datagen"])
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# lancenb's own additions to a pylance module (everything else in __all__ is pylance's)
_LANCENB_EXTRAS = {
    "log": {"configure_from_env"},
    "debug": {"Struct", "Tuple", "Word", "render"},
    "progress": {"ProgressBar", "progress_bar"},
    "commit": {"RetryableCommitConflictError"},
    "dataset": {"dataset"},
    "file": {"FileVersion", "LegacyFileReader"},
}


@pytest.mark.parametrize("module", ["log", "debug", "progress", "arrow", "util", "vector",
                                    "optimize", "commit", "schema", "file", "dataset",
                                    "_datagen"])
def test_public_names_are_pylances(module):
    import importlib

    ours = importlib.import_module(f"lancenb.{module}")
    theirs = sys.modules.get(f"lance.{module}") or importlib.import_module(f"lance.{module}")
    missing = sorted(n for n in set(ours.__all__) - _LANCENB_EXTRAS.get(module, set())
                     if not hasattr(theirs, n))
    assert missing == [], f"lancenb.{module} names pylance's module does not have"
