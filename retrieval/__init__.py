"""diachron retrieval: temporal intent, e_hypo, interval-prefiltered search, chronological evidence.

``Client`` is imported lazily so ``import retrieval`` stays light.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from retrieval.client import Client

        return Client
    raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
