"""The oldest environment lancenb declares: every runtime dependency at its lower bound.

``make test-oldest`` builds ``.venv-oldest`` with this script and runs the test suite there,
so a range in ``pyproject.toml`` cannot claim a version the suite does not pass on.

- ``constraints``: prints pip constraints pinning each runtime dependency of
  ``[project].dependencies`` at its lower bound (``numpy>=1.26`` -> ``numpy==1.26``). A
  dependency without a ``>=`` bound is an error: every one must say which version is the
  oldest that works.
- ``tools``: prints the test tools the suite needs beside the runtime dependencies, at the
  versions the ``dev`` extra pins (pytest, hypothesis, the pylance oracle, the DuckDB and
  Polars oracles, grpcio-tools for the generated-code check). pandas, pyspark, moto, s3fs
  and dask are left out on purpose: the environment has only what a user of the bare
  package has, and the tests that need those skip (pandas inputs, Spark, S3, Dask).
- ``check``: run inside the oldest environment; fails unless every runtime dependency is
  installed at exactly its lower bound and pandas is not installed.

Usage: ``python scripts/oldest_env.py constraints|tools|check``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# what the suite needs to run, besides lancenb's own dependencies (pinned in the dev extra)
TOOLS = ("pytest", "hypothesis", "pylance", "duckdb", "polars", "grpcio-tools")
# absent from the oldest environment: the package must work without them
ABSENT = ("pandas",)

_REQ = re.compile(r'^\s*"([A-Za-z0-9_.\-\[\]]+)\s*([^";]*)"')


def _array(text: str, key: str) -> list[str]:
    """The quoted strings of the TOML array ``key = [...]`` (one per line, as
    pyproject.toml writes them; comments skipped)."""
    m = re.search(rf"^{re.escape(key)}\s*=\s*\[(.*?)^\]", text, re.M | re.S)
    if m is None:
        raise SystemExit(f"{PYPROJECT}: no array {key!r}")
    return [line for line in m.group(1).splitlines()
            if line.strip() and not line.strip().startswith("#")]


def _parse(lines: list[str]) -> dict[str, str]:
    """name -> version specifier."""
    out = {}
    for line in lines:
        m = _REQ.match(line)
        if m is None:
            raise SystemExit(f"{PYPROJECT}: cannot read requirement {line.strip()!r}")
        out[m.group(1).split("[")[0].lower()] = m.group(2).replace(" ", "")
    return out


def runtime_bounds(text: str) -> dict[str, str]:
    """Each runtime dependency's lower bound (the version after ``>=``)."""
    bounds = {}
    for name, spec in _parse(_array(text, "dependencies")).items():
        lower = [s[2:] for s in spec.split(",") if s.startswith(">=")]
        if len(lower) != 1:
            raise SystemExit(f"{PYPROJECT}: runtime dependency {name} has no single '>=' "
                             f"lower bound ({spec or 'no specifier'})")
        bounds[name] = lower[0]
    return bounds


def tool_pins(text: str) -> list[str]:
    """The dev extra's pins of :data:`TOOLS`."""
    dev = _parse(_array(text, "dev"))
    missing = [t for t in TOOLS if not dev.get(t, "").startswith("==")]
    if missing:
        raise SystemExit(f"{PYPROJECT}: the dev extra does not pin {', '.join(missing)}")
    return [f"{t}{dev[t]}" for t in TOOLS]


def check(bounds: dict[str, str]) -> list[str]:
    """What is wrong with the running environment (empty when it is the oldest one)."""
    from importlib import metadata

    from packaging.version import Version

    problems = []
    for name, lower in bounds.items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed")
            continue
        if Version(have) != Version(lower):
            problems.append(f"{name} {have} is installed, not its lower bound {lower}")
    for name in ABSENT:
        try:
            problems.append(f"{name} {metadata.version(name)} is installed; it must not be")
        except metadata.PackageNotFoundError:
            pass
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("constraints", "tools", "check"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    text = PYPROJECT.read_text(encoding="utf-8")
    bounds = runtime_bounds(text)
    if argv[0] == "constraints":
        print("\n".join(f"{name}=={lower}" for name, lower in bounds.items()))
    elif argv[0] == "tools":
        print("\n".join(tool_pins(text)))
    else:
        problems = check(bounds)
        for p in problems:
            print(f"oldest environment: {p}", file=sys.stderr)
        if problems:
            return 1
        print("oldest environment: " + ", ".join(f"{n}=={v}" for n, v in bounds.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
