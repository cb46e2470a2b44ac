"""``storage_options``: what lancenb reads itself, and what it hands to fsspec.

A dataset's ``storage_options`` go to the fsspec filesystem's constructor, with two
adjustments made here, in one place, for every reader and writer:

* lancenb's own keys (:data:`SINGLE_PROCESS_COMMITS`) are taken out;
* object stores get ``use_listings_cache=False`` unless the caller set it: fsspec's
  listing cache would hide versions other writers committed;
* on ``s3://`` URIs, pylance's key names (``aws_access_key_id``, ``aws_endpoint``,
  ``aws_region``, ...) are translated to s3fs's (``key``, ``endpoint_url``,
  ``client_kwargs={"region_name": ...}``), so one dict serves both libraries.
  s3fs's own names pass through unchanged and win over a translated one.
"""

from __future__ import annotations

import os

__all__ = ["SINGLE_PROCESS_COMMITS", "fsspec_options", "single_process_commits"]

#: Opt-in for stores without a conditional write (e.g. ``memory://``): serialise commits
#: with a lock that only works inside this process. Wrong with several writing processes.
SINGLE_PROCESS_COMMITS = "single_process_commits"

_LANCENB_KEYS = frozenset({SINGLE_PROCESS_COMMITS})
# schemes whose filesystems keep no listing cache (or only this process writes them)
_IN_PROCESS = frozenset({"", "file", "local", "memory"})

# pylance (object_store) S3 key -> s3fs constructor argument
_S3_KEYS = {
    "aws_access_key_id": "key",
    "access_key_id": "key",
    "aws_secret_access_key": "secret",
    "secret_access_key": "secret",
    "aws_session_token": "token",
    "session_token": "token",
    "aws_endpoint": "endpoint_url",
    "aws_endpoint_url": "endpoint_url",
    "endpoint": "endpoint_url",
}
_S3_REGION_KEYS = ("aws_region", "region", "aws_default_region")
# object_store switches; s3fs derives them from the endpoint URL's scheme
_S3_DROPPED = frozenset({"allow_http", "aws_allow_http", "aws_virtual_hosted_style_request",
                         "virtual_hosted_style_request"})


def _truthy(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def single_process_commits(storage_options: dict | None) -> bool:
    """Whether the caller opted in to process-local commit locking."""
    return bool(storage_options) and _truthy(storage_options.get(SINGLE_PROCESS_COMMITS, False))


def fsspec_options(uri: str | os.PathLike, storage_options: dict | None) -> dict:
    """The keyword arguments for the fsspec filesystem of ``uri``."""
    opts = {k: v for k, v in (storage_options or {}).items() if k not in _LANCENB_KEYS}
    scheme = os.fspath(uri).split("://", 1)[0].lower() if "://" in os.fspath(uri) else ""
    if scheme not in _IN_PROCESS:
        # object stores' fsspec filesystems cache directory listings and refresh them
        # only on their own writes: a commit must see the versions other writers made
        opts.setdefault("use_listings_cache", False)
    if scheme not in ("s3", "s3a"):
        return opts
    out: dict = {}
    region = None
    for k, v in opts.items():
        lk = k.lower()
        if lk in _S3_KEYS:
            out.setdefault(_S3_KEYS[lk], v)
        elif lk in _S3_REGION_KEYS:
            region = v
        elif lk not in _S3_DROPPED:
            out[k] = v
    for k, v in opts.items():  # s3fs's own names win over translated ones
        if k in ("key", "secret", "token", "endpoint_url"):
            out[k] = v
    if region is not None:
        client_kwargs = dict(out.get("client_kwargs") or {})
        client_kwargs.setdefault("region_name", region)
        out["client_kwargs"] = client_kwargs
    return out
