"""A real S3-compatible server for the tests: moto's S3 on a free loopback port.

Run as a script it serves until killed and prints ``PORT <n>`` once it listens.
:func:`start` launches it in a child process (so forked or spawned test workers never
inherit its threads), creates a bucket and returns the options both lancenb and
pylance need. Credentials are fake and go only into those options; nothing reaches
the network beyond 127.0.0.1.

moto checks ``If-None-Match: *`` on PutObject (answering 412) but checks and stores in
two steps, so two simultaneous conditional puts could both pass on its threaded
server, which real S3 never allows. The server therefore takes one lock around every
request that changes objects: the conditional write is then atomic as on S3.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

KEY = "lancenb-test-key"
SECRET = "lancenb-test-secret"
REGION = "us-east-1"


@dataclass
class S3Server:
    """A running server: ``endpoint``, a fresh ``bucket`` and the options to reach it."""

    endpoint: str
    bucket: str
    proc: subprocess.Popen = field(repr=False)

    def uri(self, name: str | None = None) -> str:
        """A fresh dataset URI in the bucket."""
        return f"s3://{self.bucket}/{name or uuid.uuid4().hex}"

    @property
    def lancenb_options(self) -> dict:
        """s3fs options (lancenb also accepts :attr:`pylance_options`)."""
        return {"key": KEY, "secret": SECRET, "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": REGION}}

    @property
    def pylance_options(self) -> dict:
        return {"aws_access_key_id": KEY, "aws_secret_access_key": SECRET,
                "aws_endpoint": self.endpoint, "aws_region": REGION, "allow_http": "true"}

    def new_bucket(self) -> str:
        import boto3

        name = f"b{uuid.uuid4().hex[:16]}"
        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                     aws_secret_access_key=SECRET, region_name=REGION).create_bucket(Bucket=name)
        return name

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def start(timeout: float = 60.0) -> S3Server:
    """Start the server in a child process; returns once it answers."""
    env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("PORT ") or proc.poll() is not None:
            break
    if not line.startswith("PORT "):
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise RuntimeError(f"the moto S3 server did not start (exit code {proc.poll()})")
    server = S3Server(f"http://127.0.0.1:{int(line.split()[1])}", "", proc)
    server.bucket = server.new_bucket()
    return server


def _serve() -> None:  # pragma: no cover - runs in the child process
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialised(environ, start_response):
        if environ.get("REQUEST_METHOD") in ("GET", "HEAD"):
            return app(environ, start_response)
        with lock:
            return list(app(environ, start_response))

    server = make_server("127.0.0.1", 0, serialised, threaded=True)
    print(f"PORT {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    _serve()


def append_worker(uri: str, storage_options: dict | None, writer: int, count: int) -> list[int]:
    """Append ``count`` one-row commits (``id = writer * 1000 + k``) to ``uri``; returns
    the ids whose append returned normally. Runs in a spawned process."""
    import pyarrow as pa

    import lancenb

    done = []
    for k in range(count):
        row = writer * 1000 + k
        lancenb.write_dataset(pa.table({"id": pa.array([row], pa.int64())}), uri,
                              mode="append", storage_options=storage_options)
        done.append(row)
    return done
