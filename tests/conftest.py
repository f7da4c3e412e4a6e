"""Shared pytest setup: repo root on ``sys.path``, offline model hubs, shared data, one ingested stock
index."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")


def shared_path() -> Path:
    """The project's ``shared/`` folder (``$DIACHRON_SHARED`` or ``../shared`` beside the repo)."""
    return Path(os.environ.get("DIACHRON_SHARED") or ROOT.parent / "shared")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = shared_path()
    if not (path / "data").is_dir():
        pytest.fail(f"shared data not found at {path}: set DIACHRON_SHARED to the shared/ folder")
    return path


@pytest.fixture(scope="session")
def stock_db(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path) -> tuple[str, object]:
    """The 586 real stock summaries ingested once per session: ``(db uri, RunSummary)``."""
    from diachron.ingest.pipeline import IngestConfig, run_ingest

    uri = str(tmp_path_factory.mktemp("stocks") / "db")
    source = str(shared_dir / "data" / "stocks_quandl_wiki" / "monthly_summaries.jsonl")
    summary = run_ingest([source], IngestConfig(db_uri=uri, num_cpus=2))
    return uri, summary
