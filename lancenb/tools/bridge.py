"""The ``import lance`` bridge: code written for pylance runs on lancenb, in every process.

``import lancenb as lance`` serves one script, but not code that someone else wrote:
libraries (Ray Data's ``read_lance``, Polars' ``scan_lance``, ...), worker processes
started by a DataLoader, Spark or Ray, and every ``from lance.vector import ...``. One
opt-in step makes the name ``lance`` mean lancenb in a whole Python environment::

    python -m lancenb.tools.bridge install     # refuses if pylance is installed (see --force)
    python -m lancenb.tools.bridge status      # which ``lance`` an import gives, and why
    python -m lancenb.tools.bridge uninstall   # back to what was there before

``install`` writes two files into the environment's site-packages (nothing else is
touched, so an installed pylance stays intact):

- ``_lancenb_bridge.py``: a copy of this module;
- ``lancenb-bridge.pth``: one line, run by :mod:`site` when any interpreter of the
  environment starts, that calls :func:`activate`. That puts a finder at the front of
  ``sys.meta_path`` and imports nothing else, so a process that never imports ``lance``
  pays nothing (lancenb is imported on the first ``import lance``).

The finder maps names only: ``lance`` is the module ``lancenb`` itself and
``lance.<a>.<b>`` is ``lancenb.<a>.<b>`` (the same module objects, so
``lance.LanceDataset is lancenb.LanceDataset`` and ``lance.vector is lancenb.vector``);
a ``lance.<x>`` that lancenb lacks is a ``ModuleNotFoundError`` as usual.

Setting ``LANCENB_BRIDGE=0`` in the environment of a process turns the bridge off in
that process (then ``import lance`` finds pylance, if installed, or nothing). Interpreters
started with ``-S`` skip ``.pth`` files and so the bridge.

Examples
--------
>>> from lancenb import bridge
>>> bridge.status().lance_source in ("lancenb (bridge)", "pylance", "lancenb", "none",
...                                  "other")
True
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HOOK_MODULE", "PTH_FILE", "BridgeStatus", "activate", "install", "main",
           "status", "uninstall"]

#: the module :func:`install` writes into site-packages (a copy of this file)
HOOK_MODULE = "_lancenb_bridge"
#: the ``.pth`` file that activates it at interpreter start-up
PTH_FILE = "lancenb-bridge.pth"
#: the distribution that provides pylance's ``lance`` package
PYLANCE_DIST = "pylance"
_ENV_SWITCH = "LANCENB_BRIDGE"
_PTH_LINE = (f"import {HOOK_MODULE}; {HOOK_MODULE}.activate()  "
             "# lancenb's `import lance` bridge: python -m lancenb.tools.bridge status\n")


# --- the finder (runs in every process of the environment: standard library only) ----


class _LanceAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``lance`` and ``lance.<sub>`` resolved to ``lancenb`` and ``lancenb.<sub>``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "lance" and not fullname.startswith("lance."):
            return None
        real = "lancenb" + fullname[len("lance"):]
        if fullname == "lance":
            # no lancenb import here: importlib.util.find_spec("lance") (how libraries
            # probe for pylance) stays cheap; is_package as lancenb is a package
            if importlib.util.find_spec("lancenb") is None:
                return None
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        try:
            real_spec = importlib.util.find_spec(real)
        except (ImportError, ValueError):
            return None
        if real_spec is None:
            return None
        spec = importlib.machinery.ModuleSpec(
            fullname, self, is_package=real_spec.submodule_search_locations is not None)
        return spec

    def create_module(self, spec):
        module = importlib.import_module("lancenb" + spec.name[len("lance"):])
        # the import system stamps the alias spec on the module it is given; keep the
        # real one to put back in exec_module (lancenb.x.__spec__ stays lancenb.x's)
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        real = module.__spec__.loader_state
        if real is not None:
            module.__spec__ = real


def _finder_active() -> bool:
    return any(type(f).__name__ == "_LanceAliasFinder" for f in sys.meta_path)


def activate() -> bool:
    """Make ``import lance`` give lancenb in this process (what the ``.pth`` line runs).

    Idempotent; does nothing when ``LANCENB_BRIDGE=0`` is set. Returns whether the
    bridge is active afterwards. A ``lance`` already imported is left as it is.

    Examples
    --------
    >>> import os
    >>> from lancenb.tools.bridge import activate
    >>> os.environ.get("LANCENB_BRIDGE") == "0" or activate()  # doctest: +SKIP
    True
    """
    if os.environ.get(_ENV_SWITCH, "1").strip().lower() in ("0", "no", "false", "off"):
        return False
    if not _finder_active():
        sys.meta_path.insert(0, _LanceAliasFinder())
    return True


# --- install / uninstall / status (run by hand: may import lancenb) -------------------


@dataclass(frozen=True)
class BridgeStatus:
    """What :func:`status` found.

    Attributes
    ----------
    site_dir : str
        The site-packages directory looked at.
    installed : bool
        Whether both bridge files are there.
    up_to_date : bool
        Whether the installed hook is this lancenb's copy (``install`` again if not).
    pylance : str or None
        The installed pylance's version, or None.
    lance_source : str
        What ``import lance`` gives a new process of this interpreter:
        ``"lancenb (bridge)"``, ``"pylance"``, ``"lancenb"`` (a ``lance`` that is
        lancenb without the bridge), ``"other"`` or ``"none"``.
    lance_origin : str or None
        The file ``lance`` is loaded from in that process.
    """

    site_dir: str
    installed: bool
    up_to_date: bool
    pylance: str | None
    lance_source: str
    lance_origin: str | None

    def describe(self) -> str:
        """The report ``python -m lancenb.tools.bridge status`` prints."""
        if self.installed:
            state = "installed" + ("" if self.up_to_date else
                                   " (stale: run `python -m lancenb.tools.bridge install`)")
        else:
            state = "not installed"
        lines = [f"bridge: {state} in {self.site_dir}",
                 "pylance: " + (f"{self.pylance} installed" if self.pylance
                                else "not installed"),
                 f"`import lance` gives: {self.lance_source}"
                 + (f" ({self.lance_origin})" if self.lance_origin else "")]
        if self.installed and self.pylance:
            lines.append("note: the bridge shadows pylance; LANCENB_BRIDGE=0 gives pylance "
                         "to one process, `python -m lancenb.tools.bridge uninstall` to all")
        return "\n".join(lines)


def _site_dir(site_dir) -> Path:
    return Path(site_dir) if site_dir is not None else Path(sysconfig.get_path("purelib"))


def _pylance_version(site_dir: Path) -> str | None:
    try:
        dists = importlib.metadata.distributions(name=PYLANCE_DIST, path=[str(site_dir)])
        dist = next(iter(dists), None)
    except Exception:  # a broken dist-info is still a pylance that is there
        return "unknown version"
    if dist is None:
        return None
    return dist.version or "unknown version"


def _hook_source() -> str:
    return Path(__file__).read_text(encoding="utf-8")


def install(*, force: bool = False, site_dir: str | os.PathLike | None = None) -> Path:
    """Install the bridge into this interpreter's environment (or ``site_dir``).

    Parameters
    ----------
    force : bool, default False
        Install although pylance is installed there (the bridge then shadows it;
        pylance's files are not touched and ``uninstall`` brings it back).
    site_dir : path, optional
        The site-packages directory; default: this interpreter's (``purelib``).

    Returns
    -------
    Path
        The ``.pth`` file written.

    Raises
    ------
    lancenb.errors.InvalidInputError
        pylance is installed and ``force`` is not set, or ``site_dir`` does not exist.

    Examples
    --------
    >>> from lancenb.tools.bridge import install
    >>> install()  # doctest: +SKIP
    PosixPath('.../site-packages/lancenb-bridge.pth')
    """
    from lancenb.errors import InvalidInputError

    site = _site_dir(site_dir)
    if not site.is_dir():
        raise InvalidInputError(f"site-packages directory {str(site)!r} does not exist")
    pylance = _pylance_version(site)
    if pylance is not None and not force:
        raise InvalidInputError(
            f"pylance {pylance} is installed in {site}: the bridge would shadow it ("
            "`import lance` would give lancenb instead); uninstall pylance (pip uninstall pylance) "
            "or pass --force")
    hook = site / f"{HOOK_MODULE}.py"
    hook.write_text(_hook_source(), encoding="utf-8")
    pth = site / PTH_FILE
    pth.write_text(_PTH_LINE, encoding="utf-8")
    importlib.invalidate_caches()
    return pth


def uninstall(*, site_dir: str | os.PathLike | None = None) -> bool:
    """Remove the bridge's files; returns whether there was anything to remove.

    Examples
    --------
    >>> from lancenb.tools.bridge import uninstall
    >>> uninstall()  # doctest: +SKIP
    True
    """
    site = _site_dir(site_dir)
    removed = False
    for path in [site / PTH_FILE, site / f"{HOOK_MODULE}.py",
                 *(site / "__pycache__").glob(f"{HOOK_MODULE}.*.pyc")]:
        if path.exists():
            path.unlink()
            removed = True
    importlib.invalidate_caches()
    return removed


_PROBE = """
import importlib.util, sys
spec = importlib.util.find_spec("lance")
bridged = any(type(f).__name__ == "_LanceAliasFinder" for f in sys.meta_path)
if spec is None:
    print("none"); print("")
elif bridged and isinstance(spec.loader, importlib.abc.Loader) and \
        type(spec.loader).__name__ == "_LanceAliasFinder":
    real = importlib.util.find_spec("lancenb")
    print("lancenb (bridge)"); print(real.origin if real else "")
else:
    print("module"); print(spec.origin or "")
"""


def status(*, site_dir: str | os.PathLike | None = None,
           python: str | None = None) -> BridgeStatus:
    """Whether the bridge is installed, whether pylance is, and which ``lance`` a new
    process of ``python`` (default: this interpreter) would import.

    Examples
    --------
    >>> from lancenb.tools.bridge import status
    >>> print(status().describe())  # doctest: +SKIP
    bridge: installed in /venv/lib/python3.11/site-packages
    pylance: not installed
    `import lance` gives: lancenb (bridge) (/src/lancenb/__init__.py)
    """
    site = _site_dir(site_dir)
    hook = site / f"{HOOK_MODULE}.py"
    installed = (site / PTH_FILE).is_file() and hook.is_file()
    up_to_date = installed and hook.read_text(encoding="utf-8") == _hook_source()
    env = {k: v for k, v in os.environ.items() if k != _ENV_SWITCH}
    out = subprocess.run([python or sys.executable, "-c", "import importlib.abc\n" + _PROBE],
                         capture_output=True, text=True, env=env, check=False)
    lines = (out.stdout.splitlines() + ["none", ""])[:2] if out.returncode == 0 else \
        ["none", ""]
    source, origin = lines[0], lines[1] or None
    if source == "module":
        origin_path = Path(origin) if origin else None
        if origin_path is not None and origin_path.parent.parent == site:
            dist = _pylance_version(site)
            source = "pylance" if dist else "other"
        elif origin_path is not None and origin_path.parent.name == "lancenb":
            source = "lancenb"
        else:
            source = "pylance" if _pylance_version(site) and origin_path else "other"
    return BridgeStatus(str(site), installed, up_to_date, _pylance_version(site),
                        source, origin)


def main(argv=None) -> int:
    """``python -m lancenb.tools.bridge {install,uninstall,status}``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m lancenb.tools.bridge",
        description="Make `import lance` give lancenb in this Python environment.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install", help="install the bridge")
    p_install.add_argument("--force", action="store_true",
                           help="install even though pylance is installed (shadows it)")
    sub.add_parser("uninstall", help="remove the bridge")
    sub.add_parser("status", help="say which `lance` an import gives")
    for p in sub.choices.values():
        p.add_argument("--site-dir", default=None,
                       help="site-packages directory (default: this interpreter's)")
    args = parser.parse_args(argv)
    if args.command == "install":
        from lancenb.errors import LanceError

        try:
            pth = install(force=args.force, site_dir=args.site_dir)
        except LanceError as exc:
            print(f"lancenb.tools.bridge: {exc}", file=sys.stderr)
            return 1
        print(f"installed: {pth} (`import lance` now gives lancenb in this environment)")
        return 0
    if args.command == "uninstall":
        removed = uninstall(site_dir=args.site_dir)
        print("uninstalled" if removed else "the bridge was not installed")
        return 0
    print(status(site_dir=args.site_dir).describe())
    return 0


if __name__ == "__main__":
    sys.exit(main())
