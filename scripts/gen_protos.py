"""Regenerate the protobuf modules in ``lancenb/_proto`` from ``protos/*.proto``.

Usage::

    python scripts/gen_protos.py              # rewrite lancenb/_proto in place
    python scripts/gen_protos.py --out DIR    # write the same files into DIR instead

Requires ``grpcio-tools`` (a dev dependency); its bundled ``protoc`` and the
well-known ``google/protobuf/*.proto`` files are used, so no system protoc is needed.
The output depends only on the .proto files and the grpcio-tools version, so it
is byte-for-byte reproducible; ``tests/test_protos.py`` checks that the committed
modules are up to date.

protoc emits sibling imports (``import file_pb2 as file__pb2``), which only work
when the output directory is on ``sys.path``; they are rewritten to package
imports (``from lancenb._proto import file_pb2 as file__pb2``).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from importlib import resources
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = REPO_ROOT / "protos"
DEFAULT_OUT = REPO_ROOT / "lancenb" / "_proto"
PACKAGE = "lancenb._proto"

INIT_TEXT = '"""Generated protobuf modules (private); regenerate with scripts/gen_protos.py."""\n'

# Matches protoc's sibling imports in both .py (``import x_pb2 as x__pb2``) and
# .pyi (``import x_pb2 as _x_pb2``) output.
_SIBLING_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def _proto_files() -> list[Path]:
    files = sorted(PROTO_DIR.glob("*.proto"))
    if not files:
        raise SystemExit(f"no .proto files found in {PROTO_DIR}")
    return files


def _run_protoc(proto_files: list[Path], out_dir: Path) -> None:
    from grpc_tools import protoc

    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={PROTO_DIR}",
        f"--proto_path={well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        # protoc names each file relative to its --proto_path ("file.proto"), so the
        # embedded descriptors do not depend on where the repository lives.
        *[str(p) for p in proto_files],
    ]
    rc = protoc.main(args)
    if rc != 0:
        raise SystemExit(f"protoc failed with exit code {rc}")


def _fix_imports(text: str, local_modules: set[str]) -> str:
    def repl(m: re.Match[str]) -> str:
        module, alias = m.group(1), m.group(2)
        if module not in local_modules:
            return m.group(0)
        return f"from {PACKAGE} import {module} as {alias}"

    return _SIBLING_IMPORT.sub(repl, text)


def generate() -> dict[str, bytes]:
    """Return the generated package contents as ``{file name: bytes}``."""
    proto_files = _proto_files()
    local_modules = {p.stem + "_pb2" for p in proto_files}
    files: dict[str, bytes] = {"__init__.py": INIT_TEXT.encode()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        _run_protoc(proto_files, tmp_dir)
        for path in sorted(tmp_dir.iterdir()):
            if path.suffix not in (".py", ".pyi"):
                continue
            text = path.read_text(encoding="utf-8")
            files[path.name] = _fix_imports(text, local_modules).encode("utf-8")
    return files


def write(out_dir: Path) -> list[Path]:
    """Generate into ``out_dir``, removing stale generated modules there."""
    files = generate()
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in sorted(out_dir.glob("*_pb2.py*")):
        if old.name not in files:
            old.unlink()
    written = []
    for name, data in sorted(files.items()):
        target = out_dir / name
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output directory (default: {DEFAULT_OUT.relative_to(REPO_ROOT)})",
    )
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
