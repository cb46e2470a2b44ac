"""``base_tokenizer="jieba/<name>"`` (and ``lindera/<name>``): a dictionary missing is
an OSError in both libraries, a jieba model folder missing a ValueError (segmentation
itself: test_jieba_segmenter.py; lancenb has no lindera segmenter)."""

import json

import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import NotSupportedError

lance = pytest.importorskip("lance")


@pytest.fixture
def models(tmp_path, monkeypatch):
    home = tmp_path / "models"
    (home / "jieba" / "default").mkdir(parents=True)
    (home / "jieba" / "default" / "dict.txt").write_text("我们 98740 r\n都 202780 d\n",
                                                       encoding="utf-8")
    for name, cfg in (("no_main", {"main": "missing.txt"}),
                      ("no_user", {"main": "../default/dict.txt", "users": ["nope.txt"]})):
        (home / "jieba" / name).mkdir()
        (home / "jieba" / name / "config.json").write_text(json.dumps(cfg))
    monkeypatch.setenv("LANCE_LANGUAGE_MODEL_HOME", str(home))
    return home


@pytest.mark.parametrize("name,error", [("no_main", OSError), ("no_user", OSError),
                                        ("absent", ValueError)])
def test_missing_model_files(tmp_path, models, name, error):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"text": ["我们都有"]}), uri)
    for lib in (lancenb, lance):
        with pytest.raises(error):
            lib.dataset(uri).create_scalar_index("text", "INVERTED",
                                                 base_tokenizer=f"jieba/{name}")


def test_lindera_config_naming_missing_files(tmp_path, models, monkeypatch):
    """``lindera/<name>``: a ``config.yml`` naming a dictionary that does not exist
    (relative to the working directory) is an OSError in both libraries."""
    (models / "lindera" / "broken").mkdir(parents=True)
    (models / "lindera" / "broken" / "config.yml").write_text(
        'segmenter:\n  mode: "normal"\n  dictionary:\n    path: "./nowhere/main"\n'
        '  user_dictionary:\n    path: "./nowhere/user.bin"\n    kind: "ipadic"\n')
    monkeypatch.chdir(tmp_path)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"text": ["成田国際空港"]}), uri)
    for lib in (lancenb, lance):
        with pytest.raises(OSError):
            lib.dataset(uri).create_scalar_index("text", "INVERTED",
                                                 base_tokenizer="lindera/broken")
    (tmp_path / "nowhere" / "main").mkdir(parents=True)
    (tmp_path / "nowhere" / "user.bin").write_bytes(b"")
    with pytest.raises(NotSupportedError, match="lindera"):
        lancenb.dataset(uri).create_scalar_index("text", "INVERTED",
                                                 base_tokenizer="lindera/broken")
