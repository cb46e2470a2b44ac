"""Commit handlers: how a new version becomes the dataset's, chosen once per store.

The commit protocol (:mod:`lancenb.table.commit`) builds the next manifest and hands
it to the store's :class:`CommitHandler`, which owns the *commit point*: of several
writers racing for one version, exactly one publishes it. There are two ways:

* :class:`PutIfAbsentCommit`: the manifest is created under its final name only if
  that name is free. How the create is atomic is the store's
  (:attr:`lancenb.io.store.ObjectStore.conditional_put`, decided when it opens):
  ``"link"`` (a local disk: a temporary file hard-linked to the name, rename-like),
  ``"create"`` (an object store's conditional put: S3 ``If-None-Match``, GCS
  ``ifGenerationMatch=0``, Azure), ``"commit_lock"`` (the caller's lock shared by every
  writer) or ``"process"`` (a lock of this process: ``memory://`` or an opt-in); a
  store with none refuses to commit (:class:`~lancenb.errors.UnsafeCommitError`).
* :class:`ExternalManifestCommit`: an external manifest store
  (:mod:`lancenb.table.external`) records the version (its four-step commit); its
  listing is authoritative, so a listing first finishes a commit whose writer died.

:func:`open_store <lancenb.table.commit.open_store>` picks the handler
(:func:`commit_handler_for`) and keeps it as ``store.commit_handler``; the commit
protocol and version discovery ask the handler, never what kind of store it is.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Callable, Protocol

from lancenb.errors import CommitLockError, CommitOutcomeUnknownError, LanceFileNotFoundError
from lancenb.table.external import ExternalManifestStore, synchronize
from lancenb.table.manifest import VERSIONS_DIR, manifest_name, parse_manifest_name

__all__ = ["CommitHandler", "PutIfAbsentCommit", "ExternalManifestCommit", "Phase",
           "commit_handler_for", "handler_of", "put_new_object", "remove_files",
           "FINISH_ATTEMPTS"]

FINISH_ATTEMPTS = 3  # tries of each idempotent step after the commit point

_log = logging.getLogger("lancenb.commit")


class Phase:
    """Where an attempt is: ``publishing`` while a put at the commit point has not been
    resolved either way (an interrupt then must not remove anything), ``committed``
    once it is known to have landed."""

    publishing = False
    committed = False
    version = None  # the version being published


class CommitHandler(Protocol):
    """What the commit protocol needs of the way a store commits versions."""

    #: how versions are committed (``"link"``, ``"create"``, ``"commit_lock"``,
    #: ``"process"``, ``"external"``; None: this store cannot commit)
    kind: str | None
    #: whether a manifest found under a version's name is that version (else only a
    #: listing, which synchronises first, tells)
    names_are_authoritative: bool

    def synchronize(self, store) -> None:
        """Bring ``_versions/`` up to date before it is listed."""

    def publish(self, store, rel: str, raw: bytes, version: int,
                phase: Phase) -> Callable[[], None] | None:
        """The commit point: make ``raw`` (written to ``rel``) version ``version``
        unless that version exists. None if it was taken (nothing of this attempt
        stays), else the idempotent finishing steps (they log, never raise)."""


def remove_files(store, paths) -> None:
    """Best-effort removal of files an attempt wrote before failing short of its
    commit point (the error being raised matters more than a leftover file)."""
    for p in paths:
        try:
            store.delete(p)
        except Exception as e:  # noqa: BLE001 - an orphan is harmless, cleanup finds it
            _log.debug("could not remove %r after a failed commit: %s", p, e)


def _read_back(store, rel: str, raw: bytes) -> bool | None:
    """After a failed put of ``raw`` at ``rel``: True if the object is ours, False
    if it is absent or someone else's, None if the store cannot tell us."""
    try:
        return store.read_bytes(rel) == raw
    except LanceFileNotFoundError:
        return False
    except Exception:  # noqa: BLE001 - any other failure leaves us unable to tell
        return None


def put_new_object(store, rel: str, raw: bytes, version: int | None = None) -> bool:
    """Create ``rel`` with ``raw`` unless it exists; True if this call created it.

    A put that raises is resolved by reading the object back: our bytes there mean
    it landed (True); absent means it did not (the error is raised); someone
    else's bytes mean we lost the race (False). If the read-back fails too, the
    outcome is unknown: :class:`CommitOutcomeUnknownError`.
    """
    try:
        return store.put_if_absent(rel, raw, version)
    except CommitLockError:
        raise  # (it says whether the put happened)
    except BaseException as e:
        mine = _read_back(store, rel, raw)
        if mine is None:
            raise CommitOutcomeUnknownError(
                f"dataset {store.uri!r}: writing {rel!r} failed ({e}) and reading it back "
                f"failed too: cannot tell whether version {version} was committed; nothing "
                f"was removed", version=version) from e
        if mine:
            return True
        if store.exists(rel):
            return False
        raise


def _retry(what: str, fn) -> bool:
    """Run an idempotent post-commit step up to FINISH_ATTEMPTS times; False (logged)
    if it never succeeded."""
    for attempt in range(FINISH_ATTEMPTS):
        try:
            fn()
            return True
        except Exception as e:  # noqa: BLE001 - after the commit point errors are logged
            err = e
            time.sleep(0.001 * (attempt + 1))
    _log.warning("committed, but %s failed %d times (last error: %s); readers finish it",
                 what, FINISH_ATTEMPTS, err)
    return False


def _nothing() -> None:
    return None


class PutIfAbsentCommit:
    """Versions committed by creating the manifest under its final name if absent
    (the store's atomic create: see the module docstring)."""

    names_are_authoritative = True

    def __init__(self, kind: str | None):
        self.kind = kind

    def synchronize(self, store) -> None:
        """Nothing to do: the manifest files are the versions."""

    def publish(self, store, rel: str, raw: bytes, version: int, phase: Phase):
        """Create ``rel``; resolved by reading it back when the put fails."""
        phase.version = version
        phase.publishing = True
        try:
            won = put_new_object(store, rel, raw, version)
        except CommitOutcomeUnknownError:
            raise
        except CommitLockError as e:
            # the lock failed: before the put nothing is committed; after it the
            # version is (if the put won) and nothing may be removed, but the error
            # is the caller's to see
            phase.publishing, phase.committed = False, bool(e.committed)
            raise
        except Exception:
            phase.publishing = False  # the read-back found it absent: not committed
            raise
        phase.publishing, phase.committed = False, won
        return _nothing if won else None


class ExternalManifestCommit:
    """Versions committed through an external manifest store: 1. the manifest is
    staged under a unique name, 2. the store records it for the version (the commit
    point), 3. it is copied to its final name, 4. the store points there."""

    kind = "external"
    names_are_authoritative = False

    def __init__(self, ext: ExternalManifestStore):
        self.ext = ext

    def synchronize(self, store) -> None:
        """Finish the latest commit if its writer died between steps 2 and 4."""
        latest = self.ext.get_latest(store.uri_of(""))
        if latest is None:
            return
        version, path = latest
        if path.endswith(".manifest"):
            return
        names = store.list(VERSIONS_DIR)
        v2 = not any((p := parse_manifest_name(n)) and not p[1] for n in names)
        synchronize(store, self.ext, store.uri_of(""), version, path,
                    f"{VERSIONS_DIR}/{manifest_name(version, v2)}")

    def publish(self, store, rel: str, raw: bytes, version: int, phase: Phase):
        """Steps 1-2 now; steps 3-4 in the returned finisher."""
        phase.version = version
        ext, base_uri = self.ext, store.uri_of("")
        staged = f"{rel}-{uuid.uuid4()}"
        try:
            store.write_bytes(staged, raw)  # 1. stage
        except BaseException:
            remove_files(store, [staged])
            raise
        phase.publishing = True
        try:
            won = ext.put_if_not_exists(base_uri, version, staged)  # 2. the commit point
        except BaseException as e:
            try:
                now = ext.get(base_uri, version)
            except Exception:  # noqa: BLE001 - neither the put nor the read answered
                raise CommitOutcomeUnknownError(
                    f"dataset {store.uri!r}: recording version {version} in the manifest "
                    f"store failed ({e}) and the store cannot be read back: cannot tell "
                    f"whether it was committed; nothing was removed", version=version) from e
            if now is None:
                phase.publishing = False
                remove_files(store, [staged])
                raise
            won = now == staged
        phase.publishing, phase.committed = False, won
        if not won:
            remove_files(store, [staged])
            return None

        def final():  # 3. the manifest under its final name (readers would do it too)
            if not (store.exists(rel) and store.read_bytes(rel) == raw):
                store.write_bytes(rel, raw)

        def finish():
            if _retry(f"copying the manifest of version {version} to {rel!r}", final) and \
                    _retry(f"pointing the manifest store at {rel!r}",
                           lambda: ext.put_if_exists(base_uri, version, rel)):  # 4.
                _retry(f"removing the staged manifest {staged!r}",
                       lambda: store.delete(staged))
        return finish


def commit_handler_for(store, manifest_store=None) -> CommitHandler:
    """The commit handler of ``store``: the external manifest store's when one is
    given, else the store's atomic create (whichever ``conditional_put`` it has)."""
    if manifest_store is not None:
        return ExternalManifestCommit(manifest_store)
    return PutIfAbsentCommit(store.conditional_put)


def handler_of(store) -> CommitHandler:
    """``store.commit_handler``, chosen when it is first asked for if the store was
    not opened through :func:`~lancenb.table.commit.open_store`."""
    handler = getattr(store, "commit_handler", None)
    if handler is None:
        handler = commit_handler_for(store, getattr(store, "manifest_store", None))
        store.commit_handler = handler
    return handler
