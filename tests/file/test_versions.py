"""File version strings resolve as pylance 14 resolves them."""

import lance
import pyarrow as pa
import pytest

from lancenb.errors import InvalidInputError, LanceError, NotSupportedError
from lancenb.file.version import FileVersion, version_from_footer

# every spelling pylance 14 accepts, and some it refuses
ACCEPTED = ["legacy", "LEGACY", "Legacy", "0.1", "2.0", "2.1", "2.2", "stable", "Stable",
            "STABLE"]
UNSUPPORTED = ["next", "NEXT", "2.3"]  # pylance 14 writes these (unstable); lancenb does not
REFUSED = [" 2.1", "2.1 ", "v2.1", "V2_0", "2", "3.0", "latest", "", "0.2", "2.10"]


def _pylance_version(tmp_path, name):
    """The data file version pylance writes for ``name``, or the exception type."""
    t = pa.table({"a": pa.array([1, 2, 3])})
    try:
        ds = lance.write_dataset(t, str(tmp_path / f"d{abs(hash(name))}"),
                                 data_storage_version=name)
    except (ValueError, OSError, NotImplementedError) as e:
        return type(e)
    return ds.data_storage_version


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_names_match_pylance(tmp_path, name):
    assert FileVersion.resolve(name).label == _pylance_version(tmp_path, name)


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unstable_versions_raise_not_supported(tmp_path, name):
    assert _pylance_version(tmp_path, name) == "2.3"
    with pytest.raises(NotSupportedError, match="2.3"):
        FileVersion.resolve(name)


@pytest.mark.parametrize("name", REFUSED)
def test_refused_names_match_pylance(tmp_path, name):
    assert _pylance_version(tmp_path, name) is ValueError
    with pytest.raises(InvalidInputError, match="unknown file version"):
        FileVersion.resolve(name)


def test_non_string_is_refused():
    with pytest.raises(InvalidInputError):
        FileVersion.resolve(2.1)


def test_default_and_enum_pass_through():
    assert FileVersion.resolve(None) is FileVersion.V2_2  # pylance 14's default
    assert FileVersion.resolve(FileVersion.V2_0) is FileVersion.V2_0


@pytest.mark.parametrize("numbers,label", [((0, 0), "0.1"), ((0, 1), "0.1"), ((0, 2), "0.1"),
                                           ((0, 3), "2.0"), ((2, 0), "2.0"), ((2, 1), "2.1"),
                                           ((2, 2), "2.2")])
def test_footer_numbers(numbers, label):
    assert version_from_footer(*numbers).label == label


@pytest.mark.parametrize("numbers", [(0, 4), (1, 0), (2, 3), (3, 0), (65535, 65535)])
def test_unknown_footer_numbers_name_both(numbers):
    with pytest.raises(NotSupportedError, match=rf"{numbers[0]}\.{numbers[1]}"):
        version_from_footer(*numbers, "x.lance")


def test_data_file_numbers_as_pylance_records_them(tmp_path):
    t = pa.table({"a": pa.array([1, 2, 3])})
    for name in ("legacy", "2.0", "2.1", "2.2"):
        ds = lance.write_dataset(t, str(tmp_path / name), data_storage_version=name)
        df = ds.get_fragments()[0].data_files()[0]
        v = FileVersion.resolve(name)
        assert (df.file_major_version, df.file_minor_version) == v.data_file
        assert FileVersion.for_data_file(*v.data_file) is v


def test_file_written_with_unknown_version_is_not_supported(tmp_path):
    """A file whose footer names a version lancenb does not know."""
    from lancenb.file.reader import LanceFileReader
    from lancenb.file.writer import LanceFileWriter

    p = tmp_path / "f.lance"
    with LanceFileWriter(str(p)) as w:
        w.write_batch(pa.table({"a": pa.array([1, 2, 3])}))
    data = bytearray(p.read_bytes())
    data[-8:-4] = (2).to_bytes(2, "little") + (7).to_bytes(2, "little")
    p.write_bytes(bytes(data))
    with pytest.raises(NotSupportedError, match=r"2\.7") as e:
        LanceFileReader(str(p))
    assert isinstance(e.value, LanceError)


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.1", "2.2"])
def test_one_reader_opens_every_version(tmp_path, version):
    """LanceFileReader opens a data file of any version (0.1 through its 0.1 backend)."""
    import glob

    from lancenb.file import LanceFileReader, LegacyFileReader
    from tests._tables import assert_tables_equal

    t = pa.table({"a": pa.array(range(50)), "s": pa.array([f"x{i % 3}" for i in range(50)])})
    lance.write_dataset(t, str(tmp_path / "d"), data_storage_version=version)
    (path,) = glob.glob(str(tmp_path / "d" / "data" / "*.lance"))
    r = LanceFileReader(path)
    assert r.version is FileVersion.resolve(version)
    assert type(r) is LanceFileReader  # one reader class; the backend follows the version
    if version == "legacy":
        assert LegacyFileReader(path).num_rows() == 50
    else:
        with pytest.raises(NotSupportedError):
            LegacyFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([49, 0, 7]).to_table(), t.take([49, 0, 7]))
    assert_tables_equal(LanceFileReader(path, columns=["s"]).read_range(3, 10).to_table(),
                        t.select(["s"]).slice(3, 10))
