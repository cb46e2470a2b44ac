"""Units of the INVERTED index: bit packing and varints against plain references
(property tests), and the tokenizer's vocabulary against pylance's on English text."""

import inspect
import textwrap

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lancenb
from lancenb.index.fts import bitpack
from lancenb.index.fts.format import _varints
from lancenb.index.fts.tokenize import TokenizerParams, tokenize

lance = pytest.importorskip("lance")


def _pack_reference(values: np.ndarray, bits: int) -> bytes:
    """BitPacker4x, one value at a time: lane i % 4, LSB first, lane words interleaved."""
    words = np.zeros((4, bits), np.uint64)
    for i, v in enumerate(values.tolist()):
        lane, j = i % 4, i // 4
        at = j * bits
        for b in range(bits):
            if (v >> b) & 1:
                words[lane, (at + b) // 32] |= np.uint64(1) << np.uint64((at + b) % 32)
    return words.T.astype("<u4").tobytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 32), st.integers(0, 2**32 - 1), st.integers(1, 5))
def test_bitpack_matches_reference(bits, seed, n):
    rng = np.random.default_rng(seed)
    hi = (1 << bits) - 1 if bits else 0
    vals = rng.integers(0, hi + 1, (n, 128), dtype=np.uint64).astype(np.uint32)
    packed = bitpack.pack(vals, bits)
    assert [len(p) for p in packed] == [16 * bits] * n
    assert packed == [_pack_reference(v, bits) for v in vals]
    assert np.array_equal(bitpack.unpack(packed, bits), vals)
    if n:
        got = bitpack.num_bits(vals)
        want = [int(v.max()).bit_length() for v in vals]
        assert got.tolist() == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**40), max_size=50))
def test_varints_match_reference(values):
    raw = bytearray()
    for v in values:
        while True:
            b = v & 0x7F
            v >>= 7
            raw.append(b | (0x80 if v else 0))
            if not v:
                break
    got = _varints(np.frombuffer(bytes(raw), np.uint8))
    assert got.tolist() == [int(x) for x in values]


def _english_docs():
    import argparse
    import json
    import textwrap as tw
    out = []
    for mod in (argparse, json, tw, inspect):
        out += [p for p in textwrap.dedent(inspect.getsource(mod)).split("\n\n") if p.strip()]
    return out


@pytest.mark.parametrize("opts", [{}, {"stem": False}, {"remove_stop_words": False,
                                                        "ascii_folding": False}])
def test_vocabulary_matches_pylance(tmp_path, opts):
    docs = _english_docs() + ["Café naïve résumé Straße œuvre ångström Ærø", "don't won't I'm"]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"text": docs}), uri)
    lance.dataset(uri).create_scalar_index("text", "INVERTED", **opts)
    from lancenb.index.fts import format as fmt
    from lancenb.index.scalar.common import IndexFiles
    e = lancenb.dataset(uri).list_indices()[0]
    part = fmt.read_partition(IndexFiles(uri, e["uuid"]), 0, {}, False)
    ours = tokenize(TokenizerParams(**opts), pa.array(docs))
    assert np.array_equal(ours.num_tokens, part.num_tokens)
    assert set(ours.vocab) == set(part.tokens)


def test_stemmer_words_as_pylance(tmp_path):
    # Snowball 2's R1 prefixes ("inter", "univers", ...) and no undoubling of a vowel and
    # a double ("added" -> "add"), as tantivy's English stemmer in pylance 14
    from lancenb.index.fts.stem import stem
    words = ["added", "adding", "internal", "universal", "organization", "emergency",
             "international", "interval", "lateral", "egged", "hopping", "tanned",
             "national", "animal", "generously", "happily", "crying", "skies"]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"text": words}), uri)
    lance.dataset(uri).create_scalar_index("text", "INVERTED", remove_stop_words=False)
    from lancenb.index.fts import format as fmt
    from lancenb.index.scalar.common import IndexFiles
    e = lancenb.dataset(uri).list_indices()[0]
    p = fmt.read_partition(IndexFiles(uri, e["uuid"]), 0, {}, False)
    theirs = {}
    for t, tok in enumerate(p.tokens):
        for d in p.doc_ids[p.offsets[t]:p.offsets[t + 1]].tolist():
            theirs[words[d]] = tok
    assert {w: stem(w) for w in words} == theirs
