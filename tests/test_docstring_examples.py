"""The examples in docstrings run and print what they say (numpydoc ``Examples``)."""

import doctest
import importlib

import pytest

MODULES = ["lancenb.encodings.blocks", "lancenb.encodings.codecs", "lancenb.encodings.layouts",
           "lancenb.encodings.page", "lancenb.encodings.pb", "lancenb.io", "lancenb.tools.cli",
           "lancenb.expr.filters"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
