"""The same pipeline on object storage: ``s3://bucket/path`` on a local S3-compatible server (moto,
127.0.0.1).

Workers write their staged fragments to the bucket and the driver commits them there; the result must
equal a run on a local directory row for row, and a re-run must write nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from diachron.ingest.pipeline import IngestConfig, run_ingest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """A moto S3 server on 127.0.0.1 with bucket ``diachron``; yields Lance/LanceDB ``storage_options``."""
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one log line per S3 request otherwise

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        ).create_bucket(Bucket="diachron")
        yield {
            "aws_access_key_id": "test",
            "aws_secret_access_key": "test",
            "aws_endpoint": endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
    finally:
        server.stop()


def _rows(uri: str, options: dict[str, str] | None) -> dict[str, list[dict[str, Any]]]:
    import lancedb

    conn = lancedb.connect(uri, storage_options=options)
    skip = {"recorded_at", "run_id"}
    return {
        n: sorted(
            (
                {k: v for k, v in r.items() if k not in skip}
                for r in conn.open_table(n).to_arrow().to_pylist()
            ),
            key=lambda r: r[key],
        )
        for n, key in (("documents", "doc_id"), ("chunks", "chunk_id"))
    }


def test_ingest_into_s3_equals_a_local_run_and_reruns_write_nothing(
    s3: dict[str, str], tmp_path: Path
) -> None:
    source = tmp_path / "notes.jsonl"
    source.write_text(
        "\n".join(
            json.dumps(
                {
                    "doc_id": f"n{i}",
                    "published_at": f"2022-0{i}-01",
                    "text": f"Shipment {i} left the port on {i + 3} March 2022.",
                }
            )
            for i in range(1, 6)
        )
        + "\n"
        + "{broken\n"
    )
    uri = "s3://diachron/indexes/notes"
    config = IngestConfig(db_uri=uri, num_cpus=2, storage_options=s3)
    first = run_ingest([str(source)], config)
    assert (
        first.documents_seen,
        first.documents_written,
        first.chunks_written,
        first.documents_quarantined,
    ) == (6, 5, 5, 1)
    local = tmp_path / "local"
    run_ingest([str(source)], IngestConfig(db_uri=str(local), num_cpus=2))
    assert _rows(uri, s3) == _rows(str(local), None)

    again = run_ingest([str(source)], config)
    assert (again.documents_written, again.chunks_written, again.documents_unchanged, again.quarantined) == (
        0,
        0,
        5,
        0,
    )

    import boto3

    keys = [
        o["Key"]
        for o in boto3.client(
            "s3",
            endpoint_url=s3["aws_endpoint"],
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )
        .list_objects_v2(Bucket="diachron", Prefix="indexes/notes/_staging/")
        .get("Contents", [])
    ]
    assert [k for k in keys if not k.endswith("/")] == []  # the staging area is dropped after each commit
