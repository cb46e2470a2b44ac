"""Blob (v1) columns of 2.1/2.2 files: values go out of line as they are written, so
the page budget counts descriptions, as pylance's (one page for 20 MiB of values)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter

BLOB = {"lance-encoding:blob": "true"}


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_pages_as_pylance(tmp_path, version):
    # (no null: pylance starts a new blob page where nulls begin, lancenb does not)
    values = [bytes([65 + i % 26]) * (1024 * 1024 + i) for i in range(20)] + [b""]
    pages = {}
    for blob in (False, True):
        schema = pa.schema([pa.field("v", pa.large_binary(), metadata=BLOB if blob else None)])
        for name, lib in (("nb", None), ("pl", lance.file)):
            path = str(tmp_path / f"{name}-{blob}.lance")
            writer = (LanceFileWriter if lib is None else lib.LanceFileWriter)(
                path, schema, version=version)
            with writer as w:
                for v in values:
                    w.write_batch(pa.table({"v": pa.array([v], pa.large_binary())},
                                           schema=schema))
            pages[name, blob] = len(lance.file.LanceFileReader(path).metadata()
                                    .columns[0].pages)
            for reader in (LanceFileReader(path), lance.file.LanceFileReader(path)):
                got = reader.read_all().to_table()["v"].to_pylist()
                assert got == values
    assert pages["nb", True] == pages["pl", True] == 1
    assert pages["nb", False] > 1 and pages["pl", False] > 1


def test_blob_nulls_read_back(tmp_path):
    schema = pa.schema([pa.field("v", pa.large_binary(), metadata=BLOB)])
    values = [b"a" * 100, None, b"", None, b"b" * 70_000]
    path = str(tmp_path / "nulls.lance")
    with LanceFileWriter(path, schema) as w:
        for i in range(0, len(values), 2):
            w.write_batch(pa.table({"v": pa.array(values[i:i + 2], pa.large_binary())},
                                   schema=schema))
    for reader in (LanceFileReader(path), lance.file.LanceFileReader(path)):
        assert reader.read_all().to_table()["v"].to_pylist() == values
