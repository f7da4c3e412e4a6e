"""``connect(uri)``: the one entry that opens an index or a service, by the URI's scheme.

Example:
    >>> import diachron
    >>> local = diachron.connect("data/diachron.lancedb")              # doctest: +SKIP  (a Client)
    >>> remote = diachron.connect("http://127.0.0.1:8000")             # doctest: +SKIP  (a RemoteClient)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diachron.retrieval.client import Client
    from diachron.retrieval.remote import RemoteClient

__all__ = ["connect"]


def connect(uri: str, **options: Any) -> Client | RemoteClient:
    """A :class:`~diachron.retrieval.client.Client` for a path or ``s3://`` URI (read-only LanceDB), or a
    :class:`~diachron.retrieval.remote.RemoteClient` for an ``http(s)://`` URL of ``diachron serve``.

    Args:
        uri: a directory written by ``diachron ingest``, an object-store URI, or a service's base URL.
        **options: keyword options of the chosen class (``Client``: ``embedder``, ``intent_config``,
            ``anchor_policy``, ranking weights…; ``RemoteClient``: ``timeout`` in seconds).

    Raises:
        StoreNotFoundError, EmbedderMismatchError: as :class:`~diachron.retrieval.client.Client`.
        TypeError: an option the chosen class does not take.
    """
    if str(uri).startswith(("http://", "https://")):
        from diachron.retrieval.remote import RemoteClient

        return RemoteClient(str(uri), **options)
    from diachron.retrieval.client import Client

    return Client(str(uri), **options)
