"""diachron: time-aware retrieval-augmented generation (TA-RAG, arXiv 2507.22917, on LanceDB).

One import namespace over the layers (docs/design.md, "One namespace"), bottom to top:

* :mod:`diachron.schemas` — the contract: interval algebra (UTC, half-open ``[start, end)``), typed records
  and the Arrow schemas of the tables, intents and evidence;
* :mod:`diachron.temporal` — the temporal language shared by both sides (expression recognition and
  resolution, fiscal calendars, the LLM endpoints that read time);
* :mod:`diachron.ingest` (write side) and :mod:`diachron.retrieval` (read side);
* the application layer: :mod:`diachron.cli` (and the service), the only modules importing both sides.

The public entry points are imported lazily, so ``import diachron`` stays light::

    import diachron
    client = diachron.connect("data/diachron.lancedb")    # a Client; "http://host:8000" gives a RemoteClient

The errors (one rooted tree, drawn in :mod:`diachron.schemas.errors`) are exported here too:
``except diachron.DiachronError`` catches everything diachron raises.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from diachron.schemas import errors as _errors

__version__ = "0.2.0"

#: public name -> module that defines it (imported on first access, PEP 562)
_EXPORTS = {
    "Client": "diachron.retrieval.client",
    "RemoteClient": "diachron.retrieval.remote",
    "connect": "diachron.retrieval.connection",
    "annotate_text": "diachron.ingest.annotation.text",
    "parse_question": "diachron.retrieval.intent",
    "RepairError": "diachron.repair",
    **dict.fromkeys(_errors.__all__, _errors.__name__),  # the error tree (pure Python, imported at once)
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'diachron' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
