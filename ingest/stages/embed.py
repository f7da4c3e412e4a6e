"""The embed stage: adds each chunk's ``vector`` (float32, unit norm) and the Ray node that embedded it."""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
from diachron.ingest.stages.base import CHUNK, EMBED_NODE, REJECTED, ROW_KIND, Stage, is_record_fault
from diachron.ingest.stages.config import StageConfig
from diachron.ingest.stages.quarantine import add_quarantine, one_line

__all__ = ["EmbedStage"]

log = logging.getLogger(__name__)


class EmbedStage(Stage):
    """Adds ``vector`` (fixed-size list of ``dim`` float32, unit norm) and ``embed_node``.

    REQUIRES: row_kind, text. Only ``chunk`` rows are embedded (others get a zero vector). When the batch's
    forward pass fails, each chunk is embedded alone and a chunk that still fails (an exception or a Rust
    panic) becomes a ``rejected`` row with an ``embed`` quarantine entry; the rest of the batch goes on.
    """

    REQUIRES = (ROW_KIND, "text")

    def __init__(self, config: StageConfig) -> None:
        import os

        import torch
        from diachron.ingest.embedding import Embedder

        torch.set_num_threads(config.embed_threads or os.cpu_count() or 1)
        self.embedder = Embedder(config.embedder, batch_size=config.embed_batch_size)
        self.embedder.warm_up()
        self.node = _node_id()

    def process(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        kinds = batch.column(ROW_KIND).to_pylist()
        todo = [i for i, kind in enumerate(kinds) if kind == CHUNK]
        vectors = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        failed: dict[int, str] = {}
        try:
            vectors[todo] = self._embed([texts[i] for i in todo])
        except BaseException as exc:  # one text may sink the whole forward pass: find it
            if not is_record_fault(exc):
                raise
            failed = self._one_by_one(texts, todo, vectors)
        if failed:
            batch = _reject(batch, failed)
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        column = pa.FixedSizeListArray.from_arrays(flat, self.embedder.dim)
        nodes = pa.array([self.node] * len(texts), pa.string())
        return batch.append_column("vector", column).append_column(EMBED_NODE, nodes)

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return self.embedder.embed([t or " " for t in texts])

    def _one_by_one(self, texts: list[str], todo: list[int], vectors: np.ndarray) -> dict[int, str]:
        """Embed the chunks ``todo`` one at a time; returns ``{row: reason}`` of those that fail."""
        failed = {}
        for i in todo:
            try:
                vectors[i] = self._embed([texts[i]])[0]
            except BaseException as exc:
                if not is_record_fault(exc):
                    raise
                log.warning("embedding failed for one chunk: %s", exc)
                failed[i] = one_line("embedding failed", exc)
        return failed


def _reject(batch: pa.Table, failed: dict[int, str]) -> pa.Table:
    """``batch`` with the rows ``failed`` turned ``rejected``, each with its ``embed`` quarantine entry."""
    rows = batch.to_pylist()
    for i, reason in failed.items():
        row = rows[i]
        row[ROW_KIND] = REJECTED
        add_quarantine(row, "embed", reason, {"chunk_id": row.get("chunk_id"), "doc_id": row.get("doc_id")})
    return pa.Table.from_pylist(rows, schema=batch.schema)


def _node_id() -> str:
    """The Ray node this process runs on ("" outside Ray)."""
    try:
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else ""
    except Exception:  # noqa: BLE001 - a diagnostic only
        return ""
