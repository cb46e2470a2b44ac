"""The ``import lance`` bridge (lancenb/tools/bridge.py), installed into a fresh environment.

Never into the dev venv: pylance is there (the oracle). Each module run makes a plain
venv in a temp dir (no system site-packages) whose dependencies are the dev venv's
packages, linked one by one *without* pylance's ``lance`` and its dist-info, plus
lancenb as the dev venv's editable install has it. No network is needed; the tests skip
when such a venv cannot be made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

DEV_SITE = Path(sysconfig.get_path("purelib"))
# what the fresh venv must not see from the dev venv
_EXCLUDED = ("lance", "pylance-", "lancenb", "__editable__", "_lancenb_bridge",
             "__pycache__", "distutils-precedence.pth")


def _fresh_site(root: Path) -> Path:
    found = list(root.glob("lib/python*/site-packages"))
    if len(found) != 1:
        pytest.skip(f"no single site-packages in the fresh venv {root}")
    return found[0]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A fresh venv: (python executable, its site-packages)."""
    if not (DEV_SITE / "__editable___lancenb_0_1_0_finder.py").exists():
        pytest.skip("lancenb is not an editable install in this venv")
    root = tmp_path_factory.mktemp("bridge") / "venv"
    try:
        venv.EnvBuilder(with_pip=False, system_site_packages=False).create(root)
    except Exception as exc:  # noqa: BLE001 - any failure to build offline is a skip
        pytest.skip(f"cannot make a fresh venv: {exc}")
    site = _fresh_site(root)
    deps = root / "deps"
    deps.mkdir()
    for entry in DEV_SITE.iterdir():
        name = entry.name
        if name == "lance" or name.startswith(_EXCLUDED[1:]) or name.endswith(".pth"):
            continue
        (deps / name).symlink_to(entry)
    (site / "deps.pth").write_text(f"{deps}\n")
    for name in ("__editable__.lancenb-0.1.0.pth", "__editable___lancenb_0_1_0_finder.py",
                 "lancenb-0.1.0.dist-info"):
        src = DEV_SITE / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, site / name)
    python = root / "bin" / "python"
    check = _run(python, "import importlib.util as u; print(u.find_spec('lance'))")
    assert check.stdout.strip() == "None", check.stdout + check.stderr  # no pylance
    return python, site


def _run(python, code, *args, cwd=None, env_extra=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LANCENB_BRIDGE", "VIRTUAL_ENV")}
    env.update(env_extra or {})
    return subprocess.run([str(python), "-c", textwrap.dedent(code), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def _bridge(python, *args):
    return subprocess.run([str(python), "-m", "lancenb.tools.bridge", *args],
                          capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


@pytest.fixture
def installed(env):
    python, site = env
    out = _bridge(python, "install")
    assert out.returncode == 0, out.stderr
    yield python, site
    _bridge(python, "uninstall")


def test_write_and_read_through_import_lance(installed, tmp_path):
    python, _ = installed
    out = _run(python, """
        import sys
        import pyarrow as pa
        import lance, lance.dataset, lancenb
        from lance.vector import vec_to_table
        import lancenb.vector
        assert lance is lancenb
        assert lance.LanceDataset is lancenb.LanceDataset
        assert sys.modules["lance.dataset"] is sys.modules["lancenb.dataset"]
        assert lance.vector is lancenb.vector and vec_to_table is lancenb.vector.vec_to_table
        assert callable(lance.dataset)  # pylance's function, not the subpackage
        assert lancenb.dataset.__class__ is not type(sys)  # still the function
        assert sys.modules["lancenb.dataset"].__spec__.name == "lancenb.dataset"
        assert lance.__spec__.name == "lancenb"  # the real spec is put back
        assert not hasattr(lancenb.vector, "__path__")  # a module stays one
        uri = sys.argv[1]
        tbl = vec_to_table({i: [float(i), 1.0] for i in range(5)})
        lance.write_dataset(tbl, uri)
        ds = lance.dataset(uri)
        assert isinstance(ds, lance.LanceDataset), type(ds)
        print(ds.count_rows(), type(ds).__module__)
        """, tmp_path / "v.lance")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "5"
    assert out.stdout.split()[1].startswith("lancenb.")
    # written through the bridge, read by pylance (the dev venv's oracle)
    import lance as pylance
    assert pylance.dataset(str(tmp_path / "v.lance")).count_rows() == 5


def test_missing_submodule_is_module_not_found(installed):
    python, _ = installed
    out = _run(python, """
        try:
            import lance.no_such_module
        except ModuleNotFoundError as exc:
            print("missing", exc.name)
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["missing", "lance.no_such_module"]


def test_spawned_child_gets_lancenb(installed, tmp_path):
    python, _ = installed
    script = tmp_path / "spawn_child.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import sys

        def child(uri):
            import lance  # the child imports it first: only the .pth can bridge it
            return lance.__name__, lance.dataset(uri).count_rows()

        if __name__ == "__main__":
            import lance
            import pyarrow as pa
            uri = sys.argv[1]
            lance.write_dataset(pa.table({"x": list(range(7))}), uri)
            with mp.get_context("spawn").Pool(1) as pool:
                print(*pool.apply(child, (uri,)))
        """))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LANCENB_BRIDGE")}
    out = subprocess.run([str(python), str(script), str(tmp_path / "s.lance")],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["lancenb", "7"]


def test_status_and_switch_off(installed):
    python, site = installed
    out = _bridge(python, "status")
    assert out.returncode == 0, out.stderr
    assert f"bridge: installed in {site}" in out.stdout
    assert "pylance: not installed" in out.stdout
    assert "`import lance` gives: lancenb (bridge)" in out.stdout
    off = _run(python, "import importlib.util as u; print(u.find_spec('lance'))",
               env_extra={"LANCENB_BRIDGE": "0"})
    assert off.stdout.strip() == "None", off.stderr


def test_uninstall_restores(env):
    python, site = env
    assert _bridge(python, "install").returncode == 0
    assert (site / "lancenb-bridge.pth").exists()
    out = _bridge(python, "uninstall")
    assert out.returncode == 0 and "uninstalled" in out.stdout
    assert not (site / "lancenb-bridge.pth").exists()
    assert not (site / "_lancenb_bridge.py").exists()
    gone = _run(python, """
        try:
            import lance
        except ModuleNotFoundError:
            print("no lance")
        """)
    assert gone.stdout.strip() == "no lance", gone.stderr
    status = _bridge(python, "status")
    assert "bridge: not installed" in status.stdout
    assert "`import lance` gives: none" in status.stdout


def test_install_refuses_to_shadow_pylance(env):
    python, site = env
    fake = site / "pylance-14.0.2.dist-info"
    fake.mkdir()
    try:
        (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: pylance\n"
                                       "Version: 14.0.2\n")
        out = _bridge(python, "install")
        assert out.returncode == 1
        assert "pylance 14.0.2 is installed" in out.stderr and "--force" in out.stderr
        assert "Traceback" not in out.stderr
        assert not (site / "lancenb-bridge.pth").exists()
        status = _bridge(python, "status")
        assert "pylance: 14.0.2 installed" in status.stdout
        forced = _bridge(python, "install", "--force")
        assert forced.returncode == 0, forced.stderr
        status = _bridge(python, "status")
        assert "`import lance` gives: lancenb (bridge)" in status.stdout
        assert "shadows pylance" in status.stdout
    finally:
        _bridge(python, "uninstall")
        shutil.rmtree(fake)


def test_in_process_api_refuses_in_dev_venv(tmp_path):
    # the dev venv has pylance: install() refuses, and writes nothing
    from lancenb.errors import InvalidInputError
    from lancenb.tools import bridge

    with pytest.raises(InvalidInputError, match="pylance 14.0.2 is installed"):
        bridge.install()
    assert not (DEV_SITE / bridge.PTH_FILE).exists()
    st = bridge.status()
    assert st.pylance == "14.0.2" and not st.installed
    assert st.lance_source == "pylance"
    with pytest.raises(InvalidInputError, match="does not exist"):
        bridge.install(site_dir=tmp_path / "nope")


def test_install_status_uninstall_in_a_site_dir(tmp_path):
    from lancenb.tools import bridge

    site = tmp_path / "site-packages"
    site.mkdir()
    pth = bridge.install(site_dir=site)
    assert pth == site / "lancenb-bridge.pth"
    assert pth.read_text().startswith("import _lancenb_bridge; _lancenb_bridge.activate()")
    hook = site / "_lancenb_bridge.py"
    assert hook.read_text() == Path(bridge.__file__).read_text()
    st = bridge.status(site_dir=site)
    assert st.installed and st.up_to_date and st.pylance is None
    hook.write_text(hook.read_text() + "# an older copy\n")
    st = bridge.status(site_dir=site)
    assert st.installed and not st.up_to_date and "stale" in st.describe()
    assert bridge.uninstall(site_dir=site) is True
    assert list(site.iterdir()) == []
    assert bridge.uninstall(site_dir=site) is False


def test_activate_is_idempotent_and_switchable(monkeypatch):
    from lancenb.tools import bridge

    before = list(sys.meta_path)
    try:
        monkeypatch.setenv("LANCENB_BRIDGE", "0")
        assert bridge.activate() is False
        assert sys.meta_path == before
        monkeypatch.delenv("LANCENB_BRIDGE")
        assert bridge.activate() is True and bridge.activate() is True
        assert sum(type(f).__name__ == "_LanceAliasFinder" for f in sys.meta_path) == 1
    finally:
        sys.meta_path[:] = before


_ECOSYSTEM = {
    # library -> code run in the fresh venv on a 10-row dataset at sys.argv[1] (a 0..9,
    # b its string), printing what the assertion compares
    "polars": """
        import lance, polars as pl
        uri = sys.argv[1]
        total = pl.scan_lance(uri).filter(pl.col("a") > 4).select(pl.col("a").sum())
        print(total.collect().item(), pl.scan_lance(lance.dataset(uri)).collect().height)
        """,
    "duckdb": """
        import lance, duckdb
        ds = lance.dataset(sys.argv[1])
        print(*duckdb.sql("select sum(a), count(*) from ds where a > 4").fetchall()[0])
        """,
    "datasets": """
        import datasets
        d = datasets.load_dataset("lance", data_files={"train": sys.argv[1] + "/**"},
                                  split="train", cache_dir=sys.argv[2])
        print(sum(d["a"][5:]), d[5]["b"])
        """,
    "ray": """
        import lance, ray
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
                 object_store_memory=80 * 1024 * 1024)
        uri = sys.argv[1]
        d = ray.data.read_lance(uri, filter="a > 4")
        out = sys.argv[2] + "/copy.lance"
        ray.data.read_lance(uri).write_lance(out)
        copy = lance.dataset(out)
        print(sum(r["a"] for r in d.iter_rows()), copy.count_rows("a > 4"))
        ray.shutdown()
        """,
}
_EXPECTED = {"polars": ["35", "10"], "duckdb": ["35", "5"], "datasets": ["35", "5"],
             "ray": ["35", "5"]}


@pytest.mark.parametrize("library", sorted(_ECOSYSTEM))
def test_ecosystem_reads_through_bridge(installed, tmp_path, library):
    pytest.importorskip(library)
    python, _ = installed
    uri = tmp_path / "t.lance"
    made = _run(python, """
        import sys, lance, pyarrow as pa
        lance.write_dataset(pa.table({"a": list(range(10)),
                                      "b": [str(i) for i in range(10)]}), sys.argv[1])
        """, uri)
    assert made.returncode == 0, made.stderr
    out = _run(python, "import sys\n" + textwrap.dedent(_ECOSYSTEM[library]), uri,
               tmp_path / "cache", cwd=tmp_path,
               env_extra={"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                          "HF_HOME": str(tmp_path / "hf")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == _EXPECTED[library]
