"""Binary literals (``X'..'``), ``regexp_match`` as a condition and the wording of bad
filters, as pylance 14: the same rows on the same data (written by each library),
the same refusals, and the message parts pylance's callers match on."""

import logging

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError

TABLE = pa.table({
    "k": pa.array(range(8), pa.int64()),
    "raw": pa.array([b"\x00", b"\xde\xad", None, b"", b"\xde\xad\xbe\xef", b"z", b"\x00",
                     b"ab"], pa.binary()),
    "big": pa.array([b"q", None, b"\xff", b"qq", b"", b"q", b"x", b"\x01"], pa.large_binary()),
    "pair": pa.array([b"aa", b"ab", b"ba", b"bb", b"aa", b"zz", b"\x00\x01", b"ab"],
                     pa.binary(2)),
    "word": pa.array(["kiwi", "Banana", None, "cherry", "b", "lime", "KIWI", "mango"]),
})

FILTERS = [
    "raw = X'DEAD'", "raw = x'dead'", "raw != X'00'", "raw > X'de'", "raw <= X'00'",
    "raw = X''", "big = X'71'", "big IN (X'71', X'ff')", "big NOT IN (X'71')",
    "pair = X'6162'", "pair IN (X'6161', X'0001')", "raw IS NULL OR raw = X'7a'",
    "regexp_match(word, 'an')", "regexp_match(word, '^k', 'i')",
    "NOT regexp_match(word, 'e')", "regexp_match(word, 'i') AND k > 1",
    "regexp_match(word, 'z') OR (k = 3 AND regexp_match(word, 'r+'))",
    "regexp_match(word, 'a') IS NULL", "regexp_match(word, 'a') IS NOT NULL",
    "regexp_like(word, 'i{2}|e')",
]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    d = tmp_path_factory.mktemp("lit")
    lance.write_dataset(TABLE, d / "p")
    lancenb.write_dataset(TABLE, d / "n")
    return [d / "p", d / "n"]


@pytest.fixture(autouse=True)
def _quiet():
    logging.disable(logging.WARNING)  # pylance's regexp_match warning goes to logging
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("f", FILTERS)
def test_filter_rows_as_pylance(paths, f):
    for p in paths:
        want = lance.dataset(p).to_table(filter=f, columns=["k"])["k"].to_pylist()
        assert lancenb.dataset(p).to_table(filter=f, columns=["k"])["k"].to_pylist() == want
        assert lancenb.dataset(p).count_rows(filter=f) == len(want)


def test_binary_literal_against_a_string_column_is_refused(paths):
    with pytest.raises(ValueError):
        lance.dataset(paths[0]).to_table(filter="word = X'6b697769'")
    with pytest.raises(InvalidInputError, match="Invalid user input: .*binary literal"):
        lancenb.dataset(paths[1]).to_table(filter="word = X'6b697769'")


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_update_with_binary_literals(tmp_path, lib):
    """Either library updates, both read the same bytes."""
    lib.write_dataset(TABLE, tmp_path / "d")
    lib.dataset(tmp_path / "d").update({"raw": "X'C0FFEE'", "big": "x''"}, where="k >= 5")
    for reader in (lance, lancenb):
        t = reader.dataset(tmp_path / "d").to_table(columns=["raw", "big"], filter="k >= 4")
        assert t["raw"].to_pylist() == [b"\xde\xad\xbe\xef"] + [b"\xc0\xff\xee"] * 3
        assert t["big"].to_pylist() == [b"", b"", b"", b""]


@pytest.mark.parametrize("f, pylance_says", [
    ("word > 10", "Invalid user input: "),
    ("k BETWEEN 'a' AND 'b'", "Invalid user input: "),
    ("k LIKE", "Invalid user input: "),
    ("nope = 1", "No field named nope"),
    ("k", "does not return a boolean"),
    ("word", "does not return a boolean"),
])
def test_bad_filters_say_what_pylance_says(paths, f, pylance_says):
    with pytest.raises(ValueError, match=pylance_says):
        lance.dataset(paths[0]).to_table(filter=f)
    with pytest.raises(InvalidInputError, match=pylance_says):
        lancenb.dataset(paths[1]).to_table(filter=f)
