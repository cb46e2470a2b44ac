"""Imports flow one way (ARCHITECTURE.md): kernels <- encodings <- file <- dataset <-
spark/cli; io and errors are usable from every layer except kernels; the library never
imports pylance."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ORDER = ["encodings", "file", "dataset", "spark", "cli"]  # each may import only earlier ones


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "lancenb" or len(parts) < 2:
        return None
    return parts[1]


def _files(sub: str):
    return sorted((ROOT / sub).rglob("*.py"))


@pytest.mark.parametrize("path", _files("kernels"), ids=lambda p: p.name)
def test_kernels_import_only_numpy_numba_stdlib(path):
    allowed = {"numpy", "numba", "math", "os", "fcntl", "ast", "functools", "inspect",
               "textwrap", "__future__"}
    for mod in _imports(path):
        top = mod.split(".")[0]
        assert top in allowed or mod.startswith("kernels"), f"{path.name} imports {mod}"


@pytest.mark.parametrize("path", _files("lancenb"), ids=lambda p: str(p.relative_to(ROOT)))
def test_lancenb_layers(path):
    rel = path.relative_to(ROOT / "lancenb").parts
    own = rel[0].removesuffix(".py") if len(rel) > 1 or rel[0] == "cli.py" else None
    for mod in _imports(path):
        assert mod.split(".")[0] != "lance", f"{path} imports pylance ({mod})"
        layer = _layer(mod)
        if own in ORDER and layer in ORDER:
            assert ORDER.index(layer) <= ORDER.index(own), f"{path} ({own}) imports {mod}"


def test_no_runtime_dependency_on_pylance():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(d.lower().startswith(("pylance", "lance")) for d in deps)
