"""Quarantine rows: deterministic ids, the ``quarantine`` table row, entries carried on a stage row."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from diachron.ingest.stages.base import PENDING_QUARANTINE
from diachron.schemas.ids import short_hash

__all__ = ["add_quarantine", "one_line", "quarantine_id", "quarantine_row"]


def quarantine_id(stage: str, record_id: str, reason: str, payload_json: str) -> str:
    """Deterministic id of a quarantine entry: the same bad content with the same reason is one row, whichever
    run finds it (no run id in the hash), so re-runs do not quarantine it again."""
    return short_hash(stage, record_id, reason, payload_json)


def quarantine_row(
    stage: str,
    record_id: str,
    reason: str,
    payload: dict[str, Any],
    run_id: str,
    recorded_at: datetime | None,
) -> dict[str, Any]:
    """One ``quarantine`` row (payload as JSON, id from content)."""
    payload_json = json.dumps(payload, default=str, sort_keys=True)
    return {
        "quarantine_id": quarantine_id(stage, record_id, reason, payload_json),
        "run_id": run_id,
        "stage": stage,
        "record_id": record_id,
        "reason": reason,
        "payload_json": payload_json,
        "recorded_at": recorded_at,
    }


def add_quarantine(row: dict[str, Any], stage: str, reason: str, payload: dict[str, Any]) -> None:
    """Append a ``{stage, reason, payload}`` entry to ``row``'s pending quarantine (JSON list)."""
    entries = json.loads(row[PENDING_QUARANTINE]) if row.get(PENDING_QUARANTINE) else []
    entries.append({"stage": stage, "reason": reason, "payload": payload})
    row[PENDING_QUARANTINE] = json.dumps(entries, default=str)


def one_line(prefix: str, exc: BaseException) -> str:
    """``"<prefix>: <Type>: <first line of the message>"`` (at most 300 characters)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{prefix}: {type(exc).__name__}: {first}"[:300]
