"""A real ``diachron serve`` app on 127.0.0.1 (an ephemeral port) on a background thread, for tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from diachron.service import ServiceConfig, create_app


@contextmanager
def serving(config: ServiceConfig) -> Iterator[str]:
    """Run the service for ``config``; yields its base URL (``http://127.0.0.1:PORT``), stops it on exit."""
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="diachron-test-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test service did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
