"""The latest-version hint: the newest version without listing ``_versions/``.

After every commit lancenb (and pylance, on a local disk) writes
``_versions/latest_version_hint.json`` as ``{"version":N}``. Listing ``_versions/``
costs a request per 1,000 names on an object store and a pass over every name
everywhere; the hint gives the newest version in a few requests however many
versions there are. It is only a hint: it may be stale (a slower writer's hint
landing after a newer one's, a writer that does not write it, such as pylance on S3),
so it is checked, and any doubt falls back to the listing. (On an object store the
probe's few sequential requests cost more than one listing request until a dataset has
about a thousand versions: :func:`lancenb.table.commit.latest_version` decides when
to use it.)

:func:`probe_latest` answers only when all of these hold, else None (list instead):

1. the store has no external manifest store and no ``commit_lock`` (those keep their
   own way to the latest version);
2. nothing is under ``_refs/`` (no tags or branches). Cleanup keeps a tagged
   version while removing the versions after it, the one way versions above an
   existing version stop being contiguous: a stale hint naming a tagged version
   would then end the probe below the latest;
3. the hint is at most :data:`HINT_MAX_BYTES` bytes of JSON, an object whose
   ``"version"`` is an integer in ``1..2**64 - 2`` (other keys are ignored, as
   pylance ignores them);
4. the hinted version's manifest exists, under its V2 name or else its V1 name;
5. probing upward in that naming, version ``k + 1``, ``k + 2``, ... exists for at most
   :data:`PROBE_LIMIT` versions before one is missing (further behind, a listing is
   cheaper);
6. the version after the last found one is missing under the other naming too (a
   dataset mixing both is refused by the listing, not answered here);
7. every existence check answered: "cannot tell" (an I/O error) is not "absent".

Why the answer is right: versions are only ever added, one at a time, and cleanup
never removes the latest version; so when version ``v`` exists and ``v + 1`` does not,
``v`` is the latest (rule 2 rules out the one gap cleanup can leave). A commit racing
the probe only adds versions: the answer is then the latest at the moment of the
last check, as a listing's answer is the latest when it was taken.
"""

from __future__ import annotations

import json

from lancenb.errors import LanceError
from lancenb.table.manifest import HINT_FILE, VERSIONS_DIR, manifest_name

__all__ = ["HINT_MAX_BYTES", "PROBE_LIMIT", "REFS_DIR", "hint_bytes", "parse_hint",
           "probe_latest"]

# pylance's hint is ``{"version":N}``, at most 33 bytes; a larger file is not a hint
HINT_MAX_BYTES = 256
# versions probed past the hint before giving up on it: each is a request on an object
# store, where one listing covers 1,000 versions
PROBE_LIMIT = 32
REFS_DIR = "_refs"  # tags (and pylance's branches)
_MAX_VERSION = 2**64 - 2


def hint_bytes(version: int) -> bytes:
    """The hint file's content for ``version``: pylance's bytes (serde_json's)."""
    return b'{"version":%d}' % version


def parse_hint(raw: bytes) -> int | None:
    """The version a hint file names, or None if it is not a hint."""
    if len(raw) > HINT_MAX_BYTES:
        return None
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError):  # (UnicodeDecodeError is a ValueError)
        return None
    v = obj.get("version") if isinstance(obj, dict) else None
    if type(v) is not int or not 1 <= v <= _MAX_VERSION:  # (bool, float, str: no)
        return None
    return v


def read_hint(store) -> int | None:
    """The version the store's hint names, or None (missing, unreadable, not a hint)."""
    try:
        raw = store.read_bytes(HINT_FILE, max_bytes=HINT_MAX_BYTES + 1)
    except LanceError:
        return None
    return parse_hint(raw)


def _has_version(store, version: int, v2: bool) -> bool:
    return store.has(f"{VERSIONS_DIR}/{manifest_name(version, v2)}")


def probe_latest(store) -> tuple[int, bool] | None:
    """``(latest version, uses V2 names)`` found from the hint, or None when the
    rules of the module docstring do not all hold (then list ``_versions/``)."""
    if getattr(store, "manifest_store", None) is not None or \
            getattr(store, "commit_lock", None) is not None:
        return None
    try:
        if store.list(REFS_DIR):
            return None
        v = read_hint(store)
        if v is None:
            return None
        if _has_version(store, v, True):
            v2 = True
        elif _has_version(store, v, False):
            v2 = False
        else:
            return None  # the hint names a version that does not exist
        for _ in range(PROBE_LIMIT + 1):  # (up to PROBE_LIMIT found, then one missing)
            if not _has_version(store, v + 1, v2):
                break
            v += 1
        else:
            return None
        if _has_version(store, v + 1, not v2):
            return None  # both namings: let the listing refuse it
    except LanceError:  # cannot tell (or past the last nameable version): list
        return None
    return v, v2
