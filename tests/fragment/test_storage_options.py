"""storage_options: pylance's (object_store's) key names become the fsspec
implementation's (s3fs, gcsfs, adlfs); their own names win; unknown keys pass through.
(The S3 translation runs for real in test_distributed.py's S3 flow, with pylance's keys.)"""

import json

from lancenb.io.options import fsspec_options


def test_gcs_keys():
    key = {"type": "service_account", "project_id": "p"}
    got = fsspec_options("gs://bucket/ds", {"google_service_account_key": json.dumps(key),
                                            "google_bucket": "bucket", "project": "p"})
    assert got == {"token": key, "project": "p", "use_listings_cache": False}
    got = fsspec_options("gs://bucket/ds", {"service_account": "/keys/sa.json",
                                            "token": "google_default"})
    assert got["token"] == "google_default"  # gcsfs's own name wins
    assert fsspec_options("gs://b/ds", {"google_application_credentials": "/k.json"})[
        "token"] == "/k.json"


def test_azure_keys():
    got = fsspec_options("az://container/ds", {
        "azure_storage_account_name": "acct", "azure_storage_account_key": "k==",
        "azure_client_id": "cid", "azure_client_secret": "cs", "azure_tenant_id": "tid",
        "azure_storage_sas_key": "sv=1", "azure_endpoint": "https://acct.blob.example:10000/",
        "allow_http": "true", "max_concurrency": 4})
    assert got == {"account_name": "acct", "account_key": "k==", "client_id": "cid",
                   "client_secret": "cs", "tenant_id": "tid", "sas_token": "sv=1",
                   "account_host": "acct.blob.example:10000", "max_concurrency": 4,
                   "use_listings_cache": False}
    assert fsspec_options("abfss://c@acct/ds", {"account_name": "a", "skip_signature": "true"}
                          ) == {"account_name": "a", "anon": True, "use_listings_cache": False}


def test_s3_keys_and_pass_through():
    got = fsspec_options("s3://b/ds", {"aws_access_key_id": "ak", "aws_secret_access_key": "sk",
                                       "aws_session_token": "st", "aws_endpoint": "http://h:9",
                                       "aws_region": "eu-west-1", "allow_http": "true",
                                       "requester_pays": True})
    assert got["key"] == "ak" and got["secret"] == "sk" and got["token"] == "st"
    assert got["endpoint_url"] == "http://h:9" and got["requester_pays"] is True
    assert got["client_kwargs"] == {"region_name": "eu-west-1"} and "allow_http" not in got
    # local paths and memory:// take the options as they are
    assert fsspec_options("/tmp/x", {"auto_mkdir": True}) == {"auto_mkdir": True}
