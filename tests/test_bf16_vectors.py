"""bfloat16 vectors and tensors (fixed-size lists of lance.bfloat16) written and read
by either library: pylance's manifest logical type fixed_size_list:lance.bfloat16:N."""

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

# pylance's lance.arrow (its bfloat16 type) imports pandas, which the oldest-dependency
# environment (make test-oldest) does not have; it registers its extension types first
pytest.importorskip("pandas")
import lance.arrow  # noqa: E402,F401,I001
import lancenb.arrow  # noqa: E402,F401

bfloat16 = pytest.importorskip("ml_dtypes").bfloat16


def _table(lib):
    values = lib.arrow.BFloat16Array.from_numpy(
        np.random.default_rng(3).random(12).astype(bfloat16))
    vectors = pa.FixedSizeListArray.from_arrays(values, 3)
    tensors = pa.ExtensionArray.from_storage(pa.fixed_shape_tensor(values.type, [3]), vectors)
    return pa.table({"values": values.slice(0, 4), "vector": vectors, "tensors": tensors})


@pytest.mark.parametrize("writer", [lance, lancenb], ids=["pylance", "lancenb"])
@pytest.mark.parametrize("reader", [lance, lancenb], ids=["pylance", "lancenb"])
def test_bf16_vectors_roundtrip(tmp_path, writer, reader):
    data = _table(writer)
    writer.write_dataset(data, str(tmp_path / "ds"))
    ds = reader.dataset(str(tmp_path / "ds"))
    # (both libraries name their type lance.bfloat16; pyarrow gives back whichever
    # class registered the name first, so the schemas are compared as text)
    assert str(ds.schema) == str(data.schema)
    got = ds.to_table()
    assert str(got.schema) == str(data.schema)
    for name in data.column_names:
        assert _plain(got[name].combine_chunks()).equals(
            _plain(data[name].combine_chunks())), name


def _plain(arr):
    """The array without extension types (their storage), at any depth."""
    if isinstance(arr, pa.ExtensionArray):
        return _plain(arr.storage)
    if pa.types.is_fixed_size_list(arr.type):
        return pa.FixedSizeListArray.from_arrays(_plain(arr.flatten()), arr.type.list_size)
    return arr
