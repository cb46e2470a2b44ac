"""``Session``: the caches datasets share (pylance's ``lance.Session``), and the other
per-object options of ``lancenb.dataset()`` (``default_scan_options``, ``read_params``).

A :class:`LanceDataset` keeps the data-file readers it opened (each holds its file's
parsed metadata: schema, column and page descriptions) and the manifests of the
versions it opened. Without a session every dataset object has caches of its own;
``lancenb.dataset(uri, session=s)`` (or ``ds.session()`` passed on) makes datasets
share them, so a second handle on the same dataset reads no metadata again. Readers
are keyed by dataset URI and data-file path: data files are immutable, so a reader
opened through one version serves every version naming the file.

``metadata_cache_size_bytes`` bounds the metadata cache (its estimate, below);
``0`` caches nothing, as pylance's. ``index_cache_size_bytes`` is reported; at ``0``
vector searches keep no opened index (:mod:`lancenb.index.vector.ivf`); pylance's older
``index_cache_size`` (entries, deprecated) counts 20 MiB an entry.

:meth:`Session.size_bytes` is an estimate of what the caches hold: the bytes of the
cached manifests, and per cached reader the serialised size of its file's schema plus
``_READER_OVERHEAD`` for its page tables. It grows as scans open files, and it is the
same for every dataset sharing the session (pylance's tests compare exactly that).

``default_scan_options`` (pylance's meaning): scanner keywords every ``scanner()`` of
that dataset object starts from; what a call passes (not None) wins, ``columns`` included;
``ds.schema`` is then the default scan's projected schema (``with_row_id`` adds
``_rowid``). An unknown key is a ``ValueError`` when a scan is built, as pylance's.
``read_params`` (``cache_repetition_index``, ``validate_on_decode``) are pylance's file
reader options: lancenb always validates what it decodes and keeps repetition indices
with the reader it caches, so they are accepted and change nothing.
"""

from __future__ import annotations

import copy
import threading
import warnings

from lancenb.errors import InvalidInputError
from lancenb.io.pools import fork_safe_locks

__all__ = ["Session", "open_options", "scan_with_defaults", "with_scan_defaults"]

_READER_OVERHEAD = 1024  # bytes per cached reader beyond its schema (an estimate)
_MAX_READERS = 128  # per dataset URI, the most readers kept (oldest dropped first)
_DEFAULT_METADATA_BYTES = 1 << 30  # pylance's default metadata cache, 1 GiB
_DEFAULT_INDEX_BYTES = 6 << 30  # pylance's default index cache, 6 GiB


def _reader_size(r) -> int:
    try:
        return r.schema_full.serialize().size + _READER_OVERHEAD
    except Exception:  # noqa: BLE001 - an estimate: any reader counts for something
        return _READER_OVERHEAD


class _Readers(dict):
    """One dataset URI's open readers (path -> reader) in a session: adding one past
    the session's limits drops the oldest; a session with a metadata cache of 0
    bytes keeps none."""

    def __init__(self, session: Session):
        super().__init__()
        self._session = session

    def __setitem__(self, path, reader) -> None:
        if path in self:
            self.pop(path)
        size = _reader_size(reader)
        with self._session.lock:
            if size > self._session.metadata_cache_size_bytes:
                return  # (never cached: nothing is dropped for it)
            while self and len(self) >= _MAX_READERS:
                self._drop_oldest()
            while self and not self._session.fits(size):
                self._drop_oldest()
            if self._session.admit((id(self), path), size):
                super().__setitem__(path, reader)

    def _drop_oldest(self) -> None:
        old = next(iter(self))
        self._session.release((id(self), old))
        super().pop(old)

    def pop(self, path, *default):
        with self._session.lock:
            self._session.release((id(self), path))
        return super().pop(path, *default)


class Session:
    """Caches shared by the datasets opened with it (pylance's ``lance.Session``).

    Parameters
    ----------
    index_cache_size_bytes : int, optional
        Accepted as pylance's (lancenb caches no index).
    metadata_cache_size_bytes : int, optional
        The most bytes of file and manifest metadata kept (default 1 GiB; 0: none).

    Examples
    --------
    >>> s = lancenb.Session()  # doctest: +SKIP
    >>> ds1 = lancenb.dataset("/tmp/ds", session=s)  # doctest: +SKIP
    >>> ds2 = lancenb.dataset("/tmp/ds", session=ds1.session())  # doctest: +SKIP
    """

    def __init__(self, index_cache_size_bytes: int | None = None,
                 metadata_cache_size_bytes: int | None = None):
        for name, v in (("index_cache_size_bytes", index_cache_size_bytes),
                        ("metadata_cache_size_bytes", metadata_cache_size_bytes)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise InvalidInputError(f"{name} must be a non-negative integer, not {v!r}")
        self.index_cache_size_bytes = _DEFAULT_INDEX_BYTES if index_cache_size_bytes is None \
            else index_cache_size_bytes
        self.metadata_cache_size_bytes = _DEFAULT_METADATA_BYTES \
            if metadata_cache_size_bytes is None else metadata_cache_size_bytes
        #: guards the caches' accounting (held by callers of fits/admit/release)
        self.lock = threading.Lock()
        fork_safe_locks(self, "lock")  # (a fresh one in a forked child)
        self._readers: dict[str, _Readers] = {}
        self._manifests: dict[tuple, int] = {}
        self._sizes: dict[tuple, int] = {}
        self._used = 0

    def fits(self, size: int) -> bool:
        """Whether ``size`` more bytes fit in the metadata cache (call with :attr:`lock`)."""
        return self._used + size <= self.metadata_cache_size_bytes

    def admit(self, key: tuple, size: int) -> bool:
        """Count ``size`` bytes under ``key`` if they fit (call with :attr:`lock`)."""
        if not self.fits(size):
            return False
        self._sizes[key] = size
        self._used += size
        return True

    def release(self, key: tuple) -> None:
        """Stop counting what :meth:`admit` counted under ``key`` (call with :attr:`lock`)."""
        self._used -= self._sizes.pop(key, 0)

    def readers_of(self, uri: str) -> _Readers:
        """The reader cache (path -> reader) of the dataset at ``uri``."""
        with self.lock:
            got = self._readers.get(uri)
            if got is None:
                got = self._readers[uri] = _Readers(self)
            return got

    def saw_manifest(self, uri: str, version: int, size: int) -> None:
        """Count the manifest of ``uri`` at ``version`` (``size`` bytes) as cached."""
        with self.lock:
            if (uri, version) not in self._manifests and self.admit(("manifest", uri, version),
                                                                     size):
                self._manifests[(uri, version)] = size

    def size_bytes(self) -> int:
        """An estimate of the bytes the caches hold (see the module docs)."""
        return self._used

    def approx_num_items(self) -> int:
        """How many entries the caches hold (manifests and open files)."""
        return len(self._manifests) + sum(len(r) for r in self._readers.values())

    def is_same_as(self, other: Session) -> bool:
        """Whether ``other`` is this very session (datasets then share caches)."""
        return self is other

    def __repr__(self) -> str:
        return (f"Session(size_bytes={self.size_bytes()}, "
                f"items={self.approx_num_items()})")


_READ_PARAMS = ("cache_repetition_index", "validate_on_decode")
_DATASET_OPTIONS = ("block_size", "index_cache_size", "metadata_cache_size", "session",
                    "index_cache_size_bytes", "metadata_cache_size_bytes",
                    "default_scan_options", "read_params")


def open_options(kwargs: dict) -> tuple[Session | None, dict | None]:
    """``lancenb.dataset()``'s pylance options beyond lancenb's own, checked: the
    session its dataset uses (None: a new one of its own) and its scan defaults."""
    unknown = sorted(k for k in kwargs if k not in _DATASET_OPTIONS)
    if unknown:
        raise InvalidInputError(f"unsupported dataset() options: {unknown}")
    bad = sorted(set(kwargs.get("read_params") or {}) - set(_READ_PARAMS))
    if bad:
        raise InvalidInputError(f"unknown read_params {bad}: pylance's are {list(_READ_PARAMS)}")
    session = kwargs.get("session")
    if session is not None and not isinstance(session, Session):
        raise InvalidInputError(f"session must be a lancenb Session, not {type(session)}")
    sizes = kwargs.get("index_cache_size_bytes"), kwargs.get("metadata_cache_size_bytes")
    if kwargs.get("index_cache_size") is not None:  # pylance's older option, in entries
        warnings.warn("The 'index_cache_size' parameter is deprecated. Use "
                      "'index_cache_size_bytes' instead. The old parameter will be converted "
                      "to bytes using 20 MiB per entry.", DeprecationWarning, stacklevel=3)
        if sizes[0] is None:
            sizes = (int(kwargs["index_cache_size"]) * (20 << 20), sizes[1])
    if session is None and sizes != (None, None):
        session = Session(*sizes)
    defaults = kwargs.get("default_scan_options")
    if defaults is not None and not isinstance(defaults, dict):
        raise InvalidInputError("default_scan_options must be a dict of scanner() keywords")
    return session, (dict(defaults) if defaults else None)


def scan_with_defaults(ds, args: dict):
    """``ds.scanner(**args)`` started from ``ds``'s ``default_scan_options``."""
    args = {k: v for k, v in args.items() if k not in ("self", "__class__")}
    hints = args.pop("engine_hints", {})
    for k, v in ds._default_scan_options.items():
        if k not in args:
            raise ValueError(f"Unknown option {k}")
        if args[k] is None:
            args[k] = v
    plain = copy.copy(ds)  # (the same caches, without the defaults)
    plain._default_scan_options = None
    return plain.scanner(**args, **hints)


def with_scan_defaults(ds, defaults: dict | None):
    """``ds``, whose scans start from ``defaults`` from now on."""
    ds._default_scan_options = defaults
    return ds
