"""``diachron serve``: one warm :class:`~diachron.retrieval.client.Client` per index behind an HTTP API,
plus the page.

Endpoints (JSON; timestamps ISO-8601 UTC with ``Z``, intervals half-open ``[start, end)``):

* ``GET /search?question=…&k=10&now=…&as_of=…&answer=false`` and ``POST /search`` (body ``{question, k,
  now, as_of, window?, answer?}``) → the ``--json`` schema (same ``schema_version``). ``window`` = ``{start,
  end, relation, granularity}`` replaces the intervals read from the question (the page's "edit" of
  "Reading this as"). ``answer: true`` adds the ``answer`` object of ``ask --answer --json``
  (:mod:`diachron.retrieval.answer`; through ``ServiceConfig.llm`` when set).
* ``GET/POST /intent`` → ``{schema_version, intent}``: the parse only, no index touched.
* ``GET /health`` → ``{status, db, schema_version, rows, table_version}``; a damaged table (a data file
  missing or cut short, :mod:`diachron.repair`) answers 503 ``{status: "damaged", detail, db, …}`` with the
  one line that names the table and says what to do; searches answer 503 with the same line.
* ``GET /`` the page (``diachron/web/``); ``/docs`` and ``/openapi.json`` the OpenAPI description.

Bad input answers 400 (empty question, a clock that is not ISO-8601 or out of range, an inverted window)
or 422 (a wrong type, ``k`` outside 1–100) with a one-line ``detail``; never a traceback. Searches run one
at a time on a worker thread with at most ``max_pending`` admitted (more → 503) and ``timeout_s`` per search
once it runs (→ 504; the wait in line is bounded by ``max_pending``, not timed). The index is opened
read-only; a new table version (a later ingest) is picked up by the next request, without a restart.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from diachron.ingest.embedding import Embedder
from diachron.query import MAX_K, QueryInputError, check_question, parse_clock
from diachron.retrieval.answer import answer
from diachron.retrieval.client import Client
from diachron.retrieval.errors import RetrievalError
from diachron.retrieval.intent import IntentConfig, parse_intent
from diachron.schemas.evidence import SCHEMA_VERSION
from diachron.schemas.intent import Relation, TemporalIntent
from diachron.schemas.time import Granularity, Interval

__all__ = ["ServiceConfig", "create_app"]

log = logging.getLogger(__name__)
WEB = Path(__file__).with_name("web")


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs.

    Attributes:
        db: LanceDB URI of the index (``None``: only ``/intent``, ``/health`` and the page).
        max_pending: searches admitted at once (running + waiting); more get 503.
        timeout_s: seconds one search may run (time waiting in line is not counted); longer gets 504.
        intent: time zone and fiscal calendar for reading questions.
        llm: an :class:`~diachron.retrieval.answer.LLMConfig` that writes answers (``None``: deterministic).
    """

    db: str | None
    max_pending: int = 64
    timeout_s: float = 30.0
    intent: IntentConfig = IntentConfig()
    llm: Any = None


class Window(BaseModel):
    """An edited reading of the question's time: half-open ``[start, end)`` (ISO-8601; ``null`` = open)."""

    start: str | None = None
    end: str | None = None
    relation: Relation = Relation.BETWEEN
    granularity: Granularity = Granularity.DAY


class SearchRequest(BaseModel):
    question: str = Field(description="The question; its time expressions become the filter.")
    k: int = Field(10, ge=1, le=MAX_K, description="Number of evidence chunks (top-k).")
    now: str | None = Field(None, description="Reference time, ISO-8601 (default: the current time, UTC).")
    as_of: str | None = Field(None, description="Transaction-time bound, ISO-8601: what was known then.")
    window: Window | None = Field(None, description="Replace the time read from the question.")
    answer: bool = Field(False, description="Also write a cited answer (the answer object).")


class IntentRequest(BaseModel):
    question: str
    now: str | None = None


class _Index:
    """The warm Client of one index, renewed (sharing the loaded embedder) when a table gets a new version."""

    def __init__(self, uri: str) -> None:
        import lancedb

        self.uri = uri
        self.client = Client(
            uri, embedder=Embedder(threads=1)
        )  # one intra-op thread per query (see Embedder)
        self.client.embedder.warm_up()
        # a connection that re-reads the latest manifest on every access: the version check costs one stat
        self._watch = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        self._tables = {
            name: self._watch.open_table(name)
            for name in ("chunks", "documents")
            if name in _names(self._watch)
        }
        self.version = self._versions()
        self._lock = threading.Lock()

    def _versions(self) -> tuple[int, ...]:
        return tuple(t.version for t in self._tables.values())

    def current(self) -> Client:
        """The Client for the latest table versions (a fresh one after a new ingest)."""
        with self._lock:
            version = self._versions()
            if version != self.version:
                log.info("index %s changed (versions %s -> %s): reopening", self.uri, self.version, version)
                self.client = Client(
                    self.uri,
                    embedder=self.client.embedder,
                    intent_config=self.client.intent_config,
                    anchor_policy=self.client.anchor_policy,
                )
                self.version = version
            return self.client

    def health(self) -> dict[str, Any]:
        chunks = self._tables.get("chunks")
        return {
            "rows": chunks.count_rows() if chunks is not None else 0,
            "table_version": self._versions()[0],
        }


class _Damaged(Exception):
    """A search failed on a damaged table: the one line that says so (the service answers 503)."""


def _names(db: Any) -> set[str]:
    names = db.list_tables()
    return set(getattr(names, "tables", names))


def _error(status: int, detail: str) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


def _windowed(intent: TemporalIntent, window: Window) -> TemporalIntent:
    """``intent`` read over the user's window instead of the parsed one."""
    start, end = parse_clock(window.start, "window.start"), parse_clock(window.end, "window.end")
    try:
        interval = Interval(start, end, window.granularity)
    except ValueError as exc:
        raise QueryInputError(f"window: {exc}") from None
    intervals = (
        () if window.relation in (Relation.UNKNOWN,) or (start is None and end is None) else (interval,)
    )
    relation = window.relation if intervals or window.relation is Relation.CURRENT else Relation.UNKNOWN
    return replace(
        intent,
        intervals=intervals,
        relation=relation,
        granularity=window.granularity,
        needs_clarification=False,
        assumptions=(*intent.assumptions, "window set by the user"),
    )


def _damage(db: str | None) -> str | None:
    from diachron.repair import diagnose

    return diagnose(db)


def _open_index(db: str | None) -> _Index | None:
    """The warm index of ``db``; ``None`` when there is none, or when a damaged table keeps it from opening
    (``/health`` and ``/search`` then say so, and the next request tries again)."""
    if not db:
        return None
    try:
        return _Index(db)
    except RetrievalError:
        raise
    except Exception:
        line = _damage(db)  # checked once: one stat per data file
        if line is None:
            raise
        log.error("%s", line)
        return None


def create_app(config: ServiceConfig) -> FastAPI:
    """The ASGI app for ``config`` (the index is opened, and the embedder loaded, here).

    Raises:
        StoreNotFoundError / EmbedderMismatchError: ``config.db`` is no usable index.
    """
    index = _open_index(config.db)
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diachron-search")
    admitted = asyncio.Semaphore(config.max_pending)
    running = asyncio.Lock()  # one search at a time: the embedder already uses the cores it is given
    app = FastAPI(
        title="diachron",
        version=SCHEMA_VERSION,
        description="Time-aware retrieval (TA-RAG): cited evidence inside the time a question means.",
    )

    @app.exception_handler(QueryInputError)
    async def _bad_input(_: Request, exc: QueryInputError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        parts = [f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()]
        return _error(422, "; ".join(parts))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        log.exception("request failed")
        return _error(500, f"internal error ({type(exc).__name__}): {exc}".splitlines()[0])

    def parse(question: str, now: str | None) -> TemporalIntent:
        clock = parse_clock(now, "now") or datetime.now(UTC)
        try:
            return parse_intent(check_question(question), now=clock, config=config.intent)
        except OverflowError:
            raise QueryInputError(f"now={now}: the question's time runs past the year 9999") from None

    def run_search(request: SearchRequest) -> dict[str, Any]:
        nonlocal index
        index = index or _open_index(config.db)
        if index is None:
            raise _Damaged(_damage(config.db) or "the index cannot be opened")
        intent = parse(request.question, request.now)
        as_of = parse_clock(request.as_of, "as_of")
        client = index.current()
        try:
            # an edited window replaces the question's time; else an event anchor is resolved as in
            # Client.search
            intent = (
                _windowed(intent, request.window)
                if request.window is not None
                else client.anchored(request.question, intent, as_of=as_of)
            )
            result = client.search_intent(intent, k=request.k, as_of=as_of)
        except OverflowError:
            raise QueryInputError("the question's time lies outside the years 1–9999") from None
        except (QueryInputError, RetrievalError):
            raise
        except Exception:
            if (line := _damage(config.db)) is None:
                raise
            raise _Damaged(line) from None
        payload = result.to_dict()
        if request.answer:
            payload["answer"] = answer(result, llm=config.llm).to_dict()
        return payload

    async def search(request: SearchRequest) -> JSONResponse:
        if not config.db:
            return _error(503, "no index: start the service with `diachron serve --db URI`")
        check_question(request.question)
        if admitted.locked():
            return _error(503, f"busy: {config.max_pending} searches already admitted, retry shortly")
        async with admitted, running:  # waiting in line is bounded by max_pending, not timed
            loop = asyncio.get_running_loop()
            try:
                payload = await asyncio.wait_for(
                    loop.run_in_executor(executor, run_search, request), timeout=config.timeout_s
                )
            except TimeoutError:
                return _error(504, f"the search took longer than {config.timeout_s:g} s")
            except _Damaged as exc:
                return _error(503, str(exc))
        return JSONResponse(payload)

    @app.post("/search", summary="Search (the --json schema)")
    async def search_post(request: SearchRequest) -> JSONResponse:
        return await search(request)

    @app.get("/search", summary="Search (the --json schema)")
    async def search_get(
        question: str = Query(..., description="The question."),
        k: int = Query(10, ge=1, le=MAX_K, description="Top-k."),
        now: str | None = Query(None, description="Reference time, ISO-8601."),
        as_of: str | None = Query(None, description="Transaction-time bound, ISO-8601."),
        answer: bool = Query(False, description="Also write a cited answer (the answer object)."),
    ) -> JSONResponse:
        return await search(SearchRequest(question=question, k=k, now=now, as_of=as_of, answer=answer))

    @app.post("/intent", summary="Read a question's time (no index)")
    async def intent_post(request: IntentRequest) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "intent": parse(request.question, request.now).to_dict()}

    @app.get("/intent", summary="Read a question's time (no index)")
    async def intent_get(question: str = Query(...), now: str | None = Query(None)) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "intent": parse(question, now).to_dict()}

    @app.get("/health", summary="Liveness and the index served")
    async def health() -> Any:
        line = await asyncio.to_thread(_damage, config.db)  # one stat per data file: no data read
        if line is not None:
            body = {"status": "damaged", "detail": line, "db": config.db, "schema_version": SCHEMA_VERSION}
            return JSONResponse(body, status_code=503)
        extra = index.health() if index is not None else {"rows": 0, "table_version": None}
        return {
            "status": "ok" if index is not None else "no index",
            "db": config.db,
            "schema_version": SCHEMA_VERSION,
            **extra,
        }

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB / "index.html")

    app.mount("/static", StaticFiles(directory=WEB), name="static")
    app.state.index = index
    return app
