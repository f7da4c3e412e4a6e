"""Sentence-aware chunking with spaCy, sized in the embedder's own tokens (docs/design.md, "Chunking").

Chunks are non-overlapping runs of whole sentences holding at most ``max_tokens`` tokens (special tokens
excluded); a single sentence longer than that is split at token boundaries. Deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ChunkText", "SentenceChunker"]


@dataclass(frozen=True, slots=True)
class ChunkText:
    """One chunk: its position ``seq`` in the document, text, token count and char span ``[start, end)``."""

    seq: int
    text: str
    token_count: int
    span: tuple[int, int]


class SentenceChunker:
    """Split text into sentence-aligned chunks of at most ``max_tokens`` tokens.

    Args:
        tokenizer: the embedder's ``tokenizers.Tokenizer`` (see ``EmbedderSpec.load_tokenizer``), used to
            count tokens (no truncation, no padding).
        max_tokens: token budget per chunk including the 2 special tokens; default the embedder's limit.

    Raises:
        ValueError: ``max_tokens`` < 8.
    """

    def __init__(self, tokenizer: Any, *, max_tokens: int) -> None:
        if max_tokens < 8:
            raise ValueError(f"max_tokens must be >= 8, got {max_tokens}")
        import spacy

        self._nlp = spacy.blank("en")
        self._nlp.add_pipe("sentencizer")
        self._nlp.max_length = 50_000_000
        self._tok = tokenizer
        self.budget = max_tokens - 2

    def _sentences(self, text: str) -> list[tuple[int, int]]:
        return [(s.start_char, s.end_char) for s in self._nlp(text).sents if s.text.strip()]

    def _count(self, pieces: list[str]) -> list[int]:
        return [len(e.ids) for e in self._tok.encode_batch(pieces, add_special_tokens=False)]

    def _split_long(self, text: str, start: int) -> list[tuple[int, int, int]]:
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        out = []
        for i in range(0, len(offsets), self.budget):
            window = offsets[i : i + self.budget]
            out.append((start + window[0][0], start + window[-1][1], len(window)))
        return out

    def chunk(self, text: str) -> list[ChunkText]:
        """Chunk ``text``; an empty or whitespace-only text gives no chunks."""
        spans = self._sentences(text)
        if not spans:
            return []
        counts = self._count([text[a:b] for a, b in spans])
        units: list[tuple[int, int, int]] = []
        for (a, b), n in zip(spans, counts, strict=True):
            units.extend(self._split_long(text[a:b], a) if n > self.budget else [(a, b, n)])
        chunks: list[ChunkText] = []
        cur_start, cur_end, cur_tokens = units[0]
        for a, b, n in units[1:]:
            if cur_tokens + n <= self.budget:
                cur_end, cur_tokens = b, cur_tokens + n
                continue
            chunks.append(self._make(text, len(chunks), cur_start, cur_end, cur_tokens))
            cur_start, cur_end, cur_tokens = a, b, n
        chunks.append(self._make(text, len(chunks), cur_start, cur_end, cur_tokens))
        return chunks

    @staticmethod
    def _make(text: str, seq: int, start: int, end: int, tokens: int) -> ChunkText:
        return ChunkText(seq=seq, text=text[start:end].strip(), token_count=tokens, span=(start, end))
