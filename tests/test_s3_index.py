"""The time index beside a table on object storage (issue 30): a moto S3 server on 127.0.0.1.

The writer publishes the index as objects under ``<db>/chunks.time_index/v<table version>/`` and then the
pointer ``latest.json``; a reader (another cache directory: another machine) downloads it, searches with
it, and gets the exact top-k worked out by hand (overlaps per interval, a full inner product). Rows added
after the build are scored exactly beside the older index; a new publish is incremental, keeps one older
version on the store and replaces the reader's cached one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import boto3
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from diachron.ingest.time_index import build_time_index, publish_time_index
from diachron.retrieval import index_cache
from diachron.retrieval.filters import TimeFilter
from diachron.retrieval.search import Searcher
from diachron.schemas.records import intervals_from_arrow
from diachron.schemas.time import Interval

from bench.speed.generate import generate

pytestmark = pytest.mark.integration

N, MORE, K = 4_000, 500, 10
BUILD = {"segment_rows": 256, "ann_min_rows": 1024}
WINDOWS = [
    Interval(datetime(2010, 3, 1, tzinfo=UTC), datetime(2010, 6, 1, tzinfo=UTC)),
    Interval(datetime(1999, 1, 1, tzinfo=UTC), None),
]


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with bucket ``diachron``: ``(storage_options, AWS_* environment)``."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        _client(endpoint).create_bucket(Bucket="diachron")
        env = {
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_ENDPOINT": endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        yield {k.lower(): v for k, v in env.items()}, env
    finally:
        server.stop()


def _client(endpoint: str):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def _keys(endpoint: str, prefix: str) -> list[str]:
    listing = _client(endpoint).list_objects_v2(Bucket="diachron", Prefix=prefix)
    return sorted(o["Key"][len(prefix) :] for o in listing.get("Contents", []))


def _truth(data: pa.Table, window: Interval, vector: np.ndarray) -> list[int]:
    rows = data.to_pylist()
    inside = [
        i
        for i, r in enumerate(rows)
        if any(iv.overlaps(window) for iv in intervals_from_arrow(r["intervals"]))
    ]
    vectors = np.stack([np.asarray(rows[i]["vector"], dtype=np.float32) for i in inside])
    return [inside[j] for j in np.argsort(-(vectors @ vector))[:K]]


def _queries(data: pa.Table, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    vectors = data.column("vector").combine_chunks().values.to_numpy().reshape(-1, 384)
    picked = vectors[rng.integers(0, len(vectors), n)] + 0.05 * rng.standard_normal((n, 384))
    return [v.astype(np.float32) / np.linalg.norm(v) for v in picked]


def _top(searcher: Searcher, vector: np.ndarray, window: Interval) -> list[int]:
    offsets, _, _ = searcher.top_k_planned(vector, TimeFilter(event=(window,)), k=K)
    return offsets.tolist()


def test_index_published_on_s3_is_read_through_a_cache_and_extended(s3, tmp_path, monkeypatch):
    # its own prefix: moto's in-process servers share one store, and tests/test_replicas.py writes replicas/db
    options, env = s3
    endpoint = options["aws_endpoint"]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(index_cache, "STAMP_SECONDS", 0.0)
    data, _ = generate(N + MORE, seed=4, kind="clustered")
    first, later = data.slice(0, N), data.slice(N)
    uri = "s3://diachron/s3-index/db"
    table = lancedb.connect(uri, storage_options=options).create_table(
        "chunks",
        data=first,
        mode="overwrite",  # a create retried by the client under load must not fail
    )
    table_uri = table.to_lance().uri
    assert table_uri.startswith("s3://diachron/s3-index/db/chunks")

    monkeypatch.setenv("DIACHRON_CACHE", str(tmp_path / "writer"))
    manifest = publish_time_index(table.to_lance(), table_uri, options, **BUILD)
    version = manifest["table_version"]
    files = _keys(endpoint, "s3-index/db/chunks.time_index/")
    assert "latest.json" in files and f"v{version}/manifest.json" in files
    assert f"v{version}/vectors_int8.npy" in files and f"v{version}/classed_int8.npy" in files
    pointer = json.loads(
        _client(endpoint)
        .get_object(Bucket="diachron", Key="s3-index/db/chunks.time_index/latest.json")["Body"]
        .read()
    )
    assert pointer == {"format": manifest["format"], "table_version": version, "num_rows": N}

    monkeypatch.setenv("DIACHRON_CACHE", str(tmp_path / "reader"))  # another machine: an empty cache
    reader = Searcher(lancedb.connect(uri).open_table("chunks"), temporal_weight=0.0)
    ti = reader.time_index
    assert ti is not None and ti.num_rows == N
    assert ti.directory == index_cache.cache_dir(table_uri) / f"v{version}"
    assert str(ti.directory).startswith(str(tmp_path / "reader"))
    local = lancedb.connect(str(tmp_path / "local")).create_table("chunks", data=first)
    build_time_index(local.to_lance(), tmp_path / "local" / "chunks.time_index", **BUILD)
    local_searcher = Searcher(local, temporal_weight=0.0)
    assert local_searcher.time_index is not None
    for vector in _queries(first, 3):
        for window in WINDOWS:
            assert _top(reader, vector, window) == _truth(first, window, vector)
            assert _top(reader, vector, window) == _top(local_searcher, vector, window)

    table.add(later)  # rows after the build: the older index covers the first N, the rest scored exactly
    assert reader.is_stale()
    grown = Searcher(lancedb.connect(uri).open_table("chunks"), temporal_weight=0.0)
    assert grown.num_rows == N + MORE and grown.time_index.num_rows == N
    for vector in _queries(data, 3):
        for window in WINDOWS:
            assert _top(grown, vector, window) == _truth(data, window, vector)

    monkeypatch.setenv("DIACHRON_CACHE", str(tmp_path / "writer"))
    again = publish_time_index(table.to_lance(), table_uri, options, **BUILD)
    assert again["incremental_from_rows"] == N and again["num_rows"] == N + MORE
    writer_cache = sorted(p.name for p in index_cache.cache_dir(table_uri).iterdir())
    assert writer_cache == [
        f"v{again['table_version']}"
    ]  # the published build, nothing older, no work folder
    published = {k.split("/")[0] for k in _keys(endpoint, "s3-index/db/chunks.time_index/")}
    assert published == {"latest.json", f"v{version}", f"v{again['table_version']}"}
    monkeypatch.setenv("DIACHRON_CACHE", str(tmp_path / "reader"))
    assert grown.is_stale()  # same table version, a newer index
    fresh = Searcher(lancedb.connect(uri).open_table("chunks"), temporal_weight=0.0)
    assert fresh.time_index.num_rows == N + MORE
    assert sorted(p.name for p in index_cache.cache_dir(table_uri).glob("v*")) == [
        f"v{again['table_version']}"
    ]
    for vector in _queries(data, 2):
        assert _top(fresh, vector, WINDOWS[1]) == _truth(data, WINDOWS[1], vector)


def test_no_published_index_leaves_search_exact(s3, tmp_path, monkeypatch):
    options, env = s3
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DIACHRON_CACHE", str(tmp_path / "cache"))
    data, _ = generate(600, seed=8, kind="uniform")
    table = lancedb.connect("s3://diachron/bare/db", storage_options=options).create_table(
        "chunks", data=data
    )
    searcher = Searcher(lancedb.connect("s3://diachron/bare/db").open_table("chunks"), temporal_weight=0.0)
    assert searcher.time_index is None and index_cache.read_pointer(table.to_lance().uri) is None
    vector = _queries(data, 1)[0]
    assert _top(searcher, vector, WINDOWS[1]) == _truth(data, WINDOWS[1], vector)
