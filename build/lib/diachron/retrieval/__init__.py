"""diachron retrieval: temporal intent, e_hypo, interval-prefiltered search, chronological evidence.

``Client`` is imported lazily so ``import diachron.retrieval`` stays light; the public entry is
``from diachron import Client``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from diachron.retrieval.client import Client

        return Client
    raise AttributeError(f"module 'diachron.retrieval' has no attribute {name!r}")
