"""``lancenb.tokenize`` (pylance's ``lance.tokenize``): a text's tokens under the
INVERTED index's tokenizer options, with positions from the first kept token."""

import pytest

import lancenb
from lancenb.errors import NotSupportedError

lance = pytest.importorskip("lance")

CASES = [("the Cats and Dogs", {}), ("", {}), ("the a of", {}),
         ("x the y", dict(remove_stop_words=False, stem=False)),
         ("Über naïve Café", dict(ascii_folding=False)), ("Über naïve Café", {}),
         ("abcdef", dict(base_tokenizer="ngram")),
         ("abcdef", dict(base_tokenizer="ngram", min_ngram_length=2, max_ngram_length=4,
                         prefix_only=True)),
         ("a" * 50 + " b", {}), ("a" * 50 + " b", dict(max_token_length=None)),
         ("short longerword", dict(max_token_length=6)),
         ("Running dogs ran", dict(base_tokenizer="whitespace")),
         ("Hello, World! x-y", dict(base_tokenizer="raw")),
         ("Hello, World! x-y", dict(lower_case=False, stem=False)),
         ("the quick foxes", dict(custom_stop_words=["quick"])),
         ("running runners", dict(language="English"))]


@pytest.mark.parametrize("text,opts", CASES, ids=[str(i) for i in range(len(CASES))])
def test_tokens_as_pylance(text, opts):
    want = [(t.text, t.position) for t in lance.tokenize(text, **opts)]
    got = [(t.text, t.position) for t in lancenb.tokenize(text, **opts)]
    assert got == want


def test_repr_and_unsupported_analyzer():
    assert repr(lancenb.tokenize("Dogs")[0]) == repr(lance.tokenize("Dogs")[0])
    with pytest.raises(NotSupportedError):
        lancenb.tokenize("fooBar", analyzer="code", split_identifiers=True)
