"""Plain local paths without fsspec (lancenb.io.local, issue 18)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem

from lancenb.io import open_reader, open_writer, resolve
from lancenb.io.local import LOCAL, LocalFS, is_local, resolve_local
from lancenb.io.store import ObjectStore, conditional_put_of

posix_only = pytest.mark.skipif(os.sep != "/", reason="the fast path is POSIX only")


@posix_only
@pytest.mark.parametrize("uri", ["/a/b", "/a/b/", "/", "rel/x", "rel/x/", "./rel", ".", "",
                                 "~/x", "~", "a:b", "/a//b", "../up"])
def test_same_path_as_fsspec(uri, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    fs, path = resolve(uri)
    assert fs is LOCAL
    assert path == fsspec.core.url_to_fs(uri)[1]


def test_other_uris_and_options_go_to_fsspec(tmp_path):
    assert resolve_local("memory://x", {}) is None
    assert resolve_local("file:///x", {}) is None
    assert resolve_local("simplecache::/x", {}) is None
    assert resolve_local("/x", {"auto_mkdir": True}) is None
    fs, path = resolve(f"file://{tmp_path}")
    assert isinstance(fs, LocalFileSystem) and is_local(fs)
    assert not is_local(fsspec.filesystem("memory"))


@posix_only
def test_store_and_readers_on_the_stand_in(tmp_path):
    store = ObjectStore(str(tmp_path / "ds"))
    assert store.fs is LOCAL and store.local and store.conditional_put == "link"
    assert conditional_put_of(LocalFS())[0] == "link"
    assert store.put_if_absent("_versions/1.manifest", b"one")
    assert not store.put_if_absent("_versions/1.manifest", b"two")
    # what lancenb leaves to the filesystem object comes from fsspec's, made on demand
    found = store.fs.find(store.root)
    assert found == [f"{store.root}/_versions/1.manifest"]
    assert store.fs.exists(store.path("_versions"))
    w = open_writer(str(tmp_path / "sub" / "f.bin"))
    w.write(b"0123456789")
    w.close()
    r = open_reader(str(tmp_path / "sub" / "f.bin"))
    assert bytes(r.read_ranges([(3, 4)])[0]) == b"3456"
    r.close()
    w = open_writer(str(tmp_path / "gone.bin"))
    w.write(b"x")
    w.abort()
    assert not (tmp_path / "gone.bin").exists()
    with pytest.raises(AttributeError):
        LOCAL.__wrapped__  # noqa: B018  dunders are not handed on


def test_local_io_does_not_import_fsspec(tmp_path):
    code = textwrap.dedent("""
        import sys
        from lancenb.io import open_reader, open_writer
        from lancenb.io.store import ObjectStore
        root = sys.argv[1]
        store = ObjectStore(root + "/ds")
        assert store.put_if_absent("_versions/1.manifest", b"m")
        assert store.list("_versions") == ["1.manifest"]
        w = open_writer(root + "/ds/data/f.lance")
        w.write(b"abc")
        w.close()
        assert open_reader(root + "/ds/data/f.lance").read(0, 3) == b"abc"
        print(sorted(m for m in sys.modules if m.split(".")[0] == "fsspec"))
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
