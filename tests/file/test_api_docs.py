"""The examples in the docstrings of lancenb.file's public API and of inspect run and
print what they say; every version family reader implements the backend protocol."""

import doctest
import glob
import importlib

import lance
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.file.backend import FileBackend


@pytest.mark.parametrize("name", ["lancenb.file.reader", "lancenb.file.writer",
                                  "lancenb.inspect", "lancenb.inspect.explain",
                                  "lancenb.inspect.validate"])
def test_docstring_examples_run(name):
    # (by module name: the attribute lancenb.inspect is the function, as in pylance)
    module = importlib.import_module(name)
    got = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert got.attempted > 0 and got.failed == 0


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_every_version_family_has_a_backend(tmp_path, version):
    t = pa.table({"a": list(range(5))})
    lance.write_dataset(t, str(tmp_path / "d"), data_storage_version=version)
    (path,) = glob.glob(str(tmp_path / "d" / "data" / "*.lance"))
    r = LanceFileReader(path)
    assert isinstance(r._backend, FileBackend)
    assert r.read_column("a", rows=[1, 3]).to_pylist() == [1, 3]
    assert r.read_column(0, range=(2, 2)).to_pylist() == [2, 3]
    assert r.fields[0].name == "a" and r.field_index("a") == 0


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_writer_abort_leaves_nothing(tmp_path, version):
    p = tmp_path / "f.lance"
    w = LanceFileWriter(str(p), version=version)
    w.write_batch(pa.table({"a": [1, 2]}))
    w.abort()
    assert w.closed and not p.exists()
    w.abort()  # again: nothing to do
