"""Keep Ray's own log lines off the user's terminal during ``diachron ingest`` (our errors still show).

Ray's C++ core writes glog lines straight to file descriptor 2 ("Set ray log level from environment
variable …", "Actor … has constructor arguments in the object store and max_restarts > 0 …"), from the
driver itself and, forwarded by the driver, from the raylet and workers (``(raylet) [2026-… I …]``); Python
``logging`` levels cannot reach them. :func:`filtered_stderr` puts a pipe on fd 2 for the duration of a
command and forwards every line except Ray's informational ones:

* glog lines (``[YYYY-MM-DD hh:mm:ss,ms L pid tid] file.cc:N: …``) of level I or W, and the E-level
  actor-restart caveat listed in :data:`BENIGN`; other E/F lines (a worker died, a node failed) still pass;
* Ray's Python log lines of level INFO/WARNING (``YYYY-MM-DD hh:mm:ss,ms\\tWARNING file.py:N -- …``).

Everything else — our ``error: …`` lines, tracebacks, warnings of ours, worker ``print`` output — is
forwarded unchanged. ``diachron -v`` does not install the filter.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

__all__ = ["BENIGN", "filtered_stderr", "is_ray_noise"]

_PREFIX = r"^(?:\x1b\[[0-9;]*m)?(?:\([^)\n]*\)(?:\x1b\[[0-9;]*m)?\s+)?"  # "(raylet) ", "(MapWorker pid=7) "
_GLOG = re.compile(_PREFIX + r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ([IWEF]) \d+ \d+\] [\w./-]+:\d+: (.*)")
_PY = re.compile(_PREFIX + r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\t(?:INFO|WARNING) [\w./-]+\.py:\d+ -- ")
#: E-level glog notices that are not errors for the user (Ray Data's actor pools always restart actors)
BENIGN = ("has constructor arguments in the object store and max_restarts > 0",)


def is_ray_noise(line: str) -> bool:
    """True for one of Ray's informational log lines (see the module docstring); ``line`` without its
    newline."""
    glog = _GLOG.match(line)
    if glog:
        level, message = glog.groups()
        return level in "IW" or (level == "E" and any(b in message for b in BENIGN))
    return _PY.match(line) is not None


def _pump(source: int, target: int, stop: threading.Event) -> None:
    """Forward lines from ``source`` to ``target`` without Ray's noise; a partial line after 0.2 s idle."""
    pending = b""
    while True:
        ready, _, _ = select.select([source], [], [], 0.2)
        if not ready:
            if pending and not pending.lstrip().startswith((b"[", b"(", b"\x1b")):  # no half-read Ray line
                os.write(target, pending)
                pending = b""
            if stop.is_set():
                break
            continue
        data = os.read(source, 65536)
        if not data:
            break
        *lines, pending = (pending + data).split(b"\n")
        kept = [line for line in lines if not is_ray_noise(line.decode("utf-8", "replace"))]
        if kept:
            os.write(target, b"".join(line + b"\n" for line in kept))
    if pending and not is_ray_noise(pending.decode("utf-8", "replace")):
        os.write(target, pending)
    os.close(source)


@contextlib.contextmanager
def filtered_stderr() -> Iterator[TextIO]:
    """File descriptor 2 (and so ``sys.stderr``, and Ray's C++ logging) filtered while the block runs.

    Yields:
        A text stream on the real stderr, for a live display that must see the terminal (``isatty``).
        Everything written to fd 2 inside the block is forwarded, in order, before the block ends.
    """
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon with stderr closed): nothing to filter
        yield sys.stderr
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    stop = threading.Event()
    pump = threading.Thread(target=_pump, args=(read_end, saved, stop), name="diachron-stderr", daemon=True)
    pump.start()
    direct = os.fdopen(
        os.dup(saved), "w", buffering=1, encoding=getattr(sys.stderr, "encoding", None) or "utf-8"
    )
    try:
        yield direct if _on_fd2(sys.stderr) else sys.stderr  # a captured sys.stderr (tests) stays the target
    finally:
        direct.flush()
        sys.stderr.flush()
        os.dup2(saved, 2)  # closes the pipe's last write end: the pump reads to the end, then stops
        stop.set()
        pump.join(timeout=5)
        direct.close()
        os.close(saved)


def _on_fd2(stream: TextIO) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):
        return False
