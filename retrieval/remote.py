"""The Python client over HTTP: the same typed API as :class:`~diachron.retrieval.client.Client`, remotely.

``diachron.connect("http://host:8000")`` (or ``RemoteClient("http://host:8000")``) talks to
``diachron serve``; its :meth:`~RemoteClient.search` gives the same
:class:`~diachron.schemas.evidence.SearchResult` a local directory gives (the wire form is the ``--json``
schema, ``schema_version`` 1.x).

Example:
    >>> import diachron
    >>> client = diachron.connect("http://127.0.0.1:8000")                 # doctest: +SKIP
    >>> client.search("How did IBM stock do in March 2011?", k=5).evidence[0].published_at
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from diachron.retrieval.arguments import clock_argument
from diachron.retrieval.errors import ServiceError
from diachron.schemas.errors import ConfigError
from diachron.schemas.evidence import SearchResult, intent_from_dict
from diachron.schemas.intent import TemporalIntent
from diachron.schemas.time import format_instant

__all__ = ["RemoteClient", "ServiceError"]


class RemoteClient:
    """Search a ``diachron serve`` service (read-only), returning typed results.

    Args:
        url: the service's base URL, e.g. ``http://127.0.0.1:8000``.
        timeout: seconds per request (connect and read).

    Raises:
        ConfigError: ``url`` is no ``http(s)://`` URL (at construction).

    Raises (from the methods):
        ServiceError: bad input (status 400/422, the service's reason), a busy or failing service
            (503/504/500), or no service at ``url`` (``status=None``); ``uri`` is ``url``, ``transient`` is
            true for a 5xx or no answer.
    """

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        if not str(url).startswith(("http://", "https://")):
            raise ConfigError(
                f"RemoteClient({url!r}) needs a service's http(s):// URL; for a local or s3:// index "
                "use diachron.connect(uri) or diachron.Client(uri)",
                setting="url",
            )
        self.uri = str(url).rstrip("/")
        self._http = httpx.Client(base_url=self.uri, timeout=timeout)

    def __enter__(self) -> RemoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceError(f"no diachron service at {self.uri}: {exc}", uri=self.uri) from None
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            detail = " ".join(str(detail).split())  # one line, whatever the service sent
            raise ServiceError(f"{response.status_code}: {detail}", status=response.status_code, uri=self.uri)
        return response.json()

    def health(self) -> dict[str, Any]:
        """The service's ``/health``: ``{status, db, schema_version, rows, table_version}``."""
        return self._call("GET", "/health")

    def parse(self, question: str, *, now: datetime | None = None) -> TemporalIntent:
        """The question's temporal intent as the service reads it (``/intent``; no index involved)."""
        payload = self._call("POST", "/intent", json={"question": question, "now": _iso(now, "now")})
        return intent_from_dict(payload["intent"])

    def search(
        self, question: str, *, k: int = 10, now: datetime | None = None, as_of: datetime | None = None
    ) -> SearchResult:
        """Like :meth:`diachron.retrieval.client.Client.search` (TA-RAG with all steps on), over HTTP.

        Args:
            question: natural-language question.
            k: number of evidence chunks (1–100).
            now: reference time (aware; default: the service's current time, UTC).
            as_of: transaction-time bound: ignore rows recorded after it.

        Returns:
            :class:`~diachron.schemas.evidence.SearchResult`, evidence chronological, ``score`` = cosine.

        Raises:
            ConfigError: ``now`` or ``as_of`` is no datetime (a ``ValueError``, raised before any request).
            ServiceError: see the class.
        """
        body = {"question": question, "k": k, "now": _iso(now, "now"), "as_of": _iso(as_of, "as_of")}
        return SearchResult.from_dict(self._call("POST", "/search", json=body))

    def answer(
        self,
        question: str,
        *,
        k: int = 10,
        now: datetime | None = None,
        as_of: datetime | None = None,
        llm: Any = None,
    ) -> Any:
        """Like :meth:`diachron.retrieval.client.Client.answer`: the service's search, answered here
        (deterministically, or through ``llm``, an :class:`~diachron.retrieval.answer.LLMConfig`).

        Raises:
            ConfigError / ServiceError: as :meth:`search`.
        """
        from diachron.retrieval.answer import answer

        return answer(self.search(question, k=k, now=now, as_of=as_of), llm=llm)


def _iso(value: datetime | None, name: str) -> str | None:
    clock = clock_argument(value, name)
    return format_instant(clock) if clock is not None else None
