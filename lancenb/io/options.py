"""``storage_options``: what lancenb reads itself, and what it hands to fsspec.

A dataset's ``storage_options`` go to the fsspec filesystem's constructor, with two
adjustments made here, in one place, for every reader and writer:

* lancenb's own keys (:data:`SINGLE_PROCESS_COMMITS`) are taken out;
* object stores get ``use_listings_cache=False`` unless the caller set it: fsspec's
  listing cache would hide versions other writers committed;
* on ``s3://`` URIs, pylance's key names (``aws_access_key_id``, ``aws_endpoint``,
  ``aws_region``, ...) are translated to s3fs's (``key``, ``endpoint_url``,
  ``client_kwargs={"region_name": ...}``), so one dict serves both libraries.
  s3fs's own names pass through unchanged and win over a translated one;
* likewise on ``gs://`` (gcsfs: ``google_service_account[_key]`` -> ``token``) and
  ``az://``/``abfs[s]://`` (adlfs: ``azure_storage_account_name`` -> ``account_name``,
  ``azure_storage_account_key`` -> ``account_key``, ``azure_client_id``/``_secret``/
  ``azure_tenant_id``, ``azure_storage_sas_key`` -> ``sas_token``, ...). Keys neither
  library knows pass through unchanged.
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
    if scheme in ("gs", "gcs"):
        return _translate(opts, _GCS_KEYS, _GCS_DROPPED)
    if scheme in ("az", "abfs", "abfss", "adl"):
        return _translate(opts, _AZURE_KEYS, _AZURE_DROPPED)
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


# pylance (object_store) GCS keys -> gcsfs arguments: a service account file path or
# its JSON text become gcsfs's ``token`` (a path, or the parsed dict)
_GCS_KEYS = {
    "google_service_account": ("token", None),
    "service_account": ("token", None),
    "google_service_account_path": ("token", None),
    "service_account_path": ("token", None),
    "google_application_credentials": ("token", None),
    "google_service_account_key": ("token", "json"),
    "service_account_key": ("token", "json"),
}
# the bucket comes from the URI; http is decided by the endpoint URL
_GCS_DROPPED = frozenset({"google_bucket", "google_bucket_name", "bucket", "bucket_name",
                          "allow_http"})

# pylance (object_store) Azure keys -> adlfs arguments
_AZURE_KEYS = {
    **dict.fromkeys(("azure_storage_account_name", "account_name"), ("account_name", None)),
    **dict.fromkeys(("azure_storage_account_key", "azure_storage_access_key",
                     "azure_storage_master_key", "access_key", "account_key", "master_key"),
                    ("account_key", None)),
    **dict.fromkeys(("azure_storage_client_id", "azure_client_id", "client_id"),
                    ("client_id", None)),
    **dict.fromkeys(("azure_storage_client_secret", "azure_client_secret", "client_secret"),
                    ("client_secret", None)),
    **dict.fromkeys(("azure_storage_tenant_id", "azure_storage_authority_id", "azure_tenant_id",
                     "azure_authority_id", "tenant_id", "authority_id"), ("tenant_id", None)),
    **dict.fromkeys(("azure_storage_sas_key", "azure_storage_sas_token", "sas_key",
                     "sas_token"), ("sas_token", None)),
    **dict.fromkeys(("azure_storage_endpoint", "azure_endpoint", "endpoint"),
                    ("account_host", "host")),
    **dict.fromkeys(("azure_skip_signature", "skip_signature"), ("anon", "bool")),
}
_AZURE_DROPPED = frozenset({"azure_container_name", "container_name", "allow_http"})


def _convert(value, how):
    if how == "json" and isinstance(value, str):
        import json

        return json.loads(value)
    if how == "host" and isinstance(value, str):
        return value.split("://", 1)[-1].rstrip("/")  # adlfs wants the host, no scheme
    if how == "bool":
        return _truthy(value)
    return value


def _translate(opts: dict, keys: dict, dropped: frozenset) -> dict:
    """pylance's names -> the fsspec implementation's; unknown keys pass through, and
    the implementation's own names win over translated ones."""
    out: dict = {}
    for k, v in opts.items():
        lk = k.lower()
        if lk in keys and keys[lk][0] != k:
            name, how = keys[lk]
            out.setdefault(name, _convert(v, how))
        elif lk not in dropped:
            out[k] = v
    own = {name for name, _ in keys.values()}
    for k, v in opts.items():
        if k in own:
            out[k] = v
    return out
