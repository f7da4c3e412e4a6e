"""Ingest progress on stderr for the CLI: a live bar on a terminal, plain lines when piped or in CI.

:class:`IngestProgress` is the ``progress`` callback of :func:`diachron.ingest.pipeline.run_ingest`
(events ``loaded``, ``planned``, ``batch``, ``committed``, ``done``). On a terminal it drives a rich bar;
elsewhere (a pipe, a CI log) it prints one line per stage, at most one ``batch`` line every ``every``
seconds (plus the last one), and a "still working" line after ``every`` seconds without one, each with
the elapsed time, e.g.::

    ingest: 586 documents read, 0 rejected · 2 s
    ingest: 586 to process, 0 unchanged · 3 s
    ingest: 0/586 documents: starting the stage workers, loading their models (working) · 13 s
    ingest: 120/586 documents, 118 chunks · 20 s
    ingest: 586/586 documents, 571 chunks: committing (working) · 33 s
    ingest: committed documents, chunks · 41 s

``quiet=True`` prints nothing. Only stderr is written: ``--json`` stdout stays clean.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["IngestProgress"]

# what a run does between its plan and its first batch (worker processes start, spaCy, the embedder and
# Great Expectations load in them: tens of seconds on a small machine, whatever the corpus size)
STARTING = "starting the stage workers, loading their models"


class IngestProgress:
    """Progress of one ingest run on ``stream`` (stderr).

    Args:
        stream: where to write (a text stream; its ``isatty()`` picks the mode unless ``live`` is given).
        label: what runs, e.g. ``"ingest data.jsonl"``.
        quiet: write nothing.
        live: force the rich bar (``True``) or plain lines (``False``).
        every: seconds between plain ``batch`` lines.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        stream: TextIO,
        label: str,
        *,
        quiet: bool = False,
        live: bool | None = None,
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream, self.label, self.quiet, self.every, self.clock = stream, label, quiet, every, clock
        self.live = (stream.isatty() if live is None else live) and not quiet
        self._t0 = clock()
        self._last_batch: float | None = None
        self._committed: list[str] = []
        self._bar: Any = None
        self._task: Any = None
        self._state = "starting Ray, reading sources"
        self._last_line = self._t0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def __enter__(self) -> IngestProgress:
        self._t0 = self.clock()
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=None, info=self._state)
        elif not self.quiet:
            self._last_line = self._t0
            self._heartbeat = threading.Thread(target=self._beat, name="diachron-progress", daemon=True)
            self._heartbeat.start()
        return self

    def _beat(self) -> None:
        """A line after ``every`` seconds of silence (a long embedding stage emits no event)."""
        while not self._stop.wait(min(self.every, 1.0)):
            if self.clock() - self._last_line >= self.every:
                self._line(f"{self._state} (working)")

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=2)
        if self._bar is not None:
            self._bar.__exit__(*exc)
        elif self._committed:
            self._line(f"committed {', '.join(self._committed)}")

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._update_bar(event, info)
            return
        if event == "loaded":
            self._line(f"{info['documents']} documents read, {info['rejected']} rejected")
        elif event == "planned":
            self._state = f"0/{info['todo']} documents: {STARTING}"
            self._line(f"{info['todo']} to process, {info['unchanged']} unchanged")
        elif event == "batch":
            now, last = self.clock(), info["documents_done"] >= info["documents_total"]
            done, total = info["documents_done"], info["documents_total"]
            self._state = f"{done}/{total} documents, {info['chunks_written']} chunks"
            if last or self._last_batch is None or now - self._last_batch >= self.every:
                self._last_batch = now
                self._line(self._state)
            if last:
                self._state += ": committing"
        elif event == "committed" and info.get("table") in ("documents", "chunks", "quarantine"):
            self._committed.append(info["table"])

    def _line(self, text: str) -> None:
        with self._lock:
            self._last_line = now = self.clock()
            self.stream.write(f"ingest: {text} · {now - self._t0:.0f} s\n")
            self.stream.flush()

    def _update_bar(self, event: str, info: dict[str, Any]) -> None:
        bar, task = self._bar, self._task
        if event == "planned":
            bar.update(
                task,
                total=info["todo"] or 1,
                info=f"{info['todo']} to process, {info['unchanged']} unchanged: {STARTING}",
            )
        elif event == "batch":
            bar.update(
                task,
                completed=info["documents_done"],
                info=(
                    f"{info['documents_done']}/{info['documents_total']} docs, "
                    f"{info['chunks_written']} chunks"
                ),
            )
        elif event == "done":
            bar.update(task, completed=bar.tasks[0].total, info="done")
