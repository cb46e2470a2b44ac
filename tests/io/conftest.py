"""The moto S3 server (see ``tests/_s3server.py``), one per test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def s3():
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server] (dev extras)")
    pytest.importorskip("s3fs", reason="the S3 tests need s3fs (dev extras)")
    import _s3server

    with pytest.MonkeyPatch.context() as mp:
        # no credentials or instance metadata from the machine: only the fake ones
        for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                    "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
            mp.delenv(var, raising=False)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        server = _s3server.start()
        try:
            yield server
        finally:
            server.stop()
