"""pylance 14's posting format 2, which lancenb writes: varint posting tails, the
``_impacts`` column (block-max impacts pylance's scorer skips blocks with) and positions
in one stream per token, compared with what pylance writes for the same documents."""

import glob

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.file import LanceFileReader
from lancenb.index.fts import impacts

lance = pytest.importorskip("lance")


def _zipf_docs(n, seed=0):
    """Documents of 5-40 words from a skewed vocabulary: a few words in most documents
    (posting lists of more than 32 blocks, so level 1 entries), most in a few."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(3000)])
    lengths = rng.integers(5, 41, n)
    words = vocab[(rng.zipf(1.2, int(lengths.sum())) - 1) % len(vocab)]
    cuts = np.cumsum(lengths)[:-1]
    return pa.table({"id": np.arange(n), "text": [" ".join(w) for w in np.split(words, cuts)]})


def _invert(uri):
    (idx,) = glob.glob(f"{uri}/_indices/*/")
    tokens = LanceFileReader(idx + "part_0_tokens.lance").read_all().to_table()
    r = LanceFileReader(idx + "part_0_invert.lance")
    return tokens, r.read_all().to_table(), r.metadata().schema.metadata or {}


def test_quantized_norms_known_values():
    # exact below 16, then 3 mantissa bits: pylance's one-byte document length norms
    lengths = np.array([0, 1, 7, 8, 15, 16, 17, 18, 22, 29, 33, 60, 64, 1000, 2**32 - 1])
    assert impacts.quantize(lengths).tolist() == [0, 1, 7, 8, 15, 16, 16, 17, 19, 22, 24,
                                                  31, 32, 63, 239]


def test_entry_bytes_known_answer():
    # documents (freq, length) (1, 10), (4, 11), (2, 30) up to document 137: the pair
    # (2, 30) is dominated by (4, 11); (1, 10) needs its norm delta, (4, 11) does not
    col = impacts.impacts_column(np.array([0, 3]), np.array([5, 90, 137], np.uint32),
                                 np.array([1, 4, 2], np.uint32),
                                 np.zeros(138, np.uint32) + np.array(
                                     [10 if i == 5 else 11 if i == 90 else 30
                                      for i in range(138)], np.uint32))
    level0, level1 = col[0].as_py()
    assert level0 == bytes([0x89, 0x01, 0x02, 0x01, 0x0A, 0x04]) == level1


def test_varints_known_answer():
    data, at = impacts.varint_encode(np.array([0, 127, 128, 300, 2**32 - 1], np.uint64))
    assert data.tobytes() == bytes([0, 0x7F, 0x80, 0x01, 0xAC, 0x02,
                                    0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
    assert at.tolist() == [0, 1, 2, 4, 6, 11]


def test_format2_columns_equal_pylances(tmp_path):
    t = _zipf_docs(6000)
    lancenb.write_dataset(t, str(tmp_path / "nb"), max_rows_per_file=2500)
    lancenb.write_dataset(t, str(tmp_path / "pl"), max_rows_per_file=2500)
    lancenb.dataset(str(tmp_path / "nb")).create_scalar_index("text", "INVERTED")
    lance.dataset(str(tmp_path / "pl")).create_scalar_index("text", "INVERTED")
    nb_tok, nb, nb_meta = _invert(str(tmp_path / "nb"))
    _, pl, pl_meta = _invert(str(tmp_path / "pl"))
    for k in (b"format_version", b"posting_tail_codec", b"posting_block_size"):
        assert nb_meta[k] == pl_meta[k]
    assert nb.schema.names == pl.schema.names
    # pylance numbers tokens in the order they first appear, as lancenb does
    assert nb.num_rows == pl.num_rows
    nb_imp, pl_imp = nb.column("_impacts").to_pylist(), pl.column("_impacts").to_pylist()
    assert nb_imp == pl_imp
    assert max(len(e) for e in nb_imp) > 33  # (level 1 entries over 32 blocks)
    assert nb.column("_length").equals(pl.column("_length"))
    # the posting blocks: same documents; block scores may differ in the last bit
    same = [a[4:] == b[4:] for x, y in zip(nb.column("_posting").to_pylist(),
                                           pl.column("_posting").to_pylist())
            for a, b in zip(x, y)]
    assert all(same)
    assert nb_tok.num_rows == nb.num_rows


def test_pylance_and_lancenb_query_format2(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_zipf_docs(4000, seed=1), uri)
    lancenb.dataset(uri).create_scalar_index("text", "INVERTED")
    other = str(tmp_path / "pl")
    lancenb.write_dataset(_zipf_docs(4000, seed=1), other)
    lance.dataset(other).create_scalar_index("text", "INVERTED")
    for q in ["w0x w1x", "w2x", "w10x w500x w7x", "w2999x"]:
        want = lance.dataset(other).to_table(full_text_query=q, limit=10,
                                             columns=["id", "_score"])
        for ds in (lance.dataset(uri), lancenb.dataset(uri)):
            got = ds.to_table(full_text_query=q, limit=10, columns=["id", "_score"])
            # (rows of equal scores come in either order, and a tie at the 10th place
            # may keep either row: compare score then id above the last score)
            last = float(np.round(want.column("_score").to_numpy().min(), 5))
            assert [p for p in _ranked(got) if p[0] > last] == \
                [p for p in _ranked(want) if p[0] > last]
            assert np.allclose(np.sort(got.column("_score").to_numpy()),
                               np.sort(want.column("_score").to_numpy()), rtol=1e-6)


def _ranked(t):
    return sorted(zip(np.round(t.column("_score").to_numpy(), 5).tolist(),
                      t.column("id").to_pylist()), key=lambda p: (-p[0], p[1]))


def test_positions_format2_equal_pylances(tmp_path):
    """With positions both libraries write format 2: the shared position stream per token
    and its block offsets equal pylance's; phrase queries read them in both."""
    t = _zipf_docs(3000, seed=2)
    cols = {}
    for builder in (lancenb, lance):
        uri = str(tmp_path / builder.__name__)
        lancenb.write_dataset(t, uri)
        builder.dataset(uri).create_scalar_index("text", "INVERTED", with_position=True)
        _, inv, meta = _invert(uri)
        assert meta[b"positions_layout"] == b"shared_stream_v2"
        cols[builder.__name__] = {k: inv.column(k).to_pylist() for k in (
            "_impacts", "_compressed_position", "_position_block_offset", "_length")}
        words = [s.split() for s in t.column("text").to_pylist()]
        for a, b in (("w0x", "w1x"), ("w3x", "w0x")):
            want = {i for i, w in enumerate(words)
                    if any(x == a and y == b for x, y in zip(w, w[1:]))}
            for reader in (lancenb, lance):
                got = reader.dataset(uri).to_table(full_text_query=f'"{a} {b}"',
                                                   columns=["id"])
                assert set(got.column("id").to_pylist()) == want and want
    assert cols["lancenb"] == cols["lance"]
