"""take_blobs of deleted rows: refused as pylance refuses them (a NotImplementedError
naming deleted rows); live rows still read the same."""

import lance
import pyarrow as pa
import pytest

import lancenb

SCHEMA = pa.schema([pa.field("idx", pa.uint64()),
                    pa.field("blobs", pa.large_binary(),
                             metadata={"lance-encoding:blob": "true"})])


@pytest.fixture(params=[lance, lancenb], ids=["pylance", "lancenb"])
def uri(request, tmp_path):
    t = pa.table({"idx": pa.array(range(5), pa.uint64()),
                  "blobs": pa.array([b"x" * i for i in range(5)], pa.large_binary())},
                 schema=SCHEMA)
    ds = request.param.write_dataset(t, str(tmp_path / "ds"))
    ds.delete("idx = 1")
    return str(tmp_path / "ds")


@pytest.mark.parametrize("kw", [{"ids": [0, 1, 2, 3, 4]}, {"ids": [1]},
                                {"addresses": [1]}, {"addresses": [0, 1, 2]}])
def test_deleted_rows_refused_as_pylance(uri, kw):
    for lib in (lance, lancenb):
        with pytest.raises(NotImplementedError, match="Expected .* rows, got .*must not "
                                                      "target deleted rows"):
            lib.dataset(uri).take_blobs("blobs", **kw)


@pytest.mark.parametrize("kw", [{"ids": [0, 2]}, {"indices": [0, 1]}, {"addresses": [4]}])
def test_live_rows_read_as_pylance(uri, kw):
    def read(lib):
        return [b.readall() for b in lib.dataset(uri).take_blobs("blobs", **kw)]
    assert read(lancenb) == read(lance)
