"""diachron retrieval: temporal intent, e_hypo, interval-prefiltered search, chronological evidence.

``Client``, ``RemoteClient`` and ``connect`` are imported lazily so ``import diachron.retrieval`` stays
light; the public entry is ``diachron.connect(uri)`` (or ``from diachron import Client``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Client", "RemoteClient", "connect"]

_EXPORTS = {
    "Client": "diachron.retrieval.client",
    "RemoteClient": "diachron.retrieval.remote",
    "connect": "diachron.retrieval.connection",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        from importlib import import_module

        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'diachron.retrieval' has no attribute {name!r}")
