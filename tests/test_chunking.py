"""Sentence-aware chunking sized in the embedder's own tokens (real tokenizer, real spaCy)."""

from __future__ import annotations

import pytest
from diachron.ingest.chunking import SentenceChunker
from diachron.ingest.embedding import resolve_embedder


@pytest.fixture(scope="module")
def tokenizer():
    return resolve_embedder().load_tokenizer()


def test_default_budget_is_the_embedders_limit():
    spec = resolve_embedder()
    assert (spec.name, spec.dim, spec.max_tokens) == ("all-MiniLM-L6-v2", 384, 256)


def test_chunks_respect_the_budget_and_sentence_boundaries(tokenizer):
    sentences = [f"Sentence number {n} talks about the tariff of {1920 + n}." for n in range(40)]
    text = " ".join(sentences)
    chunker = SentenceChunker(tokenizer, max_tokens=64)
    chunks = chunker.chunk(text)
    assert len(chunks) > 1
    for c in chunks:
        n = len(tokenizer.encode(c.text, add_special_tokens=False).ids)
        assert n <= 62 and c.token_count == n
        assert c.text.startswith("Sentence number") and c.text.endswith(".")
    assert " ".join(c.text for c in chunks) == text  # nothing lost, no overlap
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert chunker.chunk(text) == chunks  # deterministic


def test_a_sentence_longer_than_the_budget_is_split_at_tokens(tokenizer):
    text = "word " * 300
    chunks = SentenceChunker(tokenizer, max_tokens=100).chunk(text)
    assert [c.token_count for c in chunks] == [98, 98, 98, 6]
    assert SentenceChunker(tokenizer, max_tokens=100).chunk("   ") == []
