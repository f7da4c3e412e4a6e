"""Lexical baseline for the evaluation: BM25 over the ``chunks`` table's text (``bm25s``; DESIGN "Baselines").

The index is built in memory from the table at construction (English stop words removed, no stemming),
with no time filter and no e_hypo: plain keyword retrieval on the same chunks the vector search sees.
Naive vector search is :meth:`diachron.retrieval.client.Client.naive_search`; no naive + reranker baseline
exists, because no cross-encoder's weights ship in a PyPI package and model hubs are unreachable here.

Example:
    >>> import lancedb                                                   # doctest: +SKIP
    >>> bm25 = BM25Searcher(lancedb.connect("data/diachron.lancedb").open_table("chunks"))
    >>> [h.row["doc_id"] for h in bm25.search("tariff debate in 1930", k=3)]
"""

from __future__ import annotations

from typing import Any

from diachron.retrieval.search import COLUMNS, Hit

__all__ = ["BM25Searcher"]


class BM25Searcher:
    """BM25 (Lucene variant, ``bm25s`` defaults k1=1.5, b=0.75) over every row of a ``chunks`` table.

    Args:
        table: a LanceDB table with the ``chunks`` schema; read once, at construction.

    Raises:
        ValueError: the table has no rows.
    """

    def __init__(self, table: Any) -> None:
        import bm25s

        self._rows: list[dict[str, Any]] = table.to_lance().to_table(columns=COLUMNS).to_pylist()
        if not self._rows:
            raise ValueError("BM25Searcher needs a non-empty chunks table")
        self._bm25 = bm25s.BM25()
        self._bm25.index(
            bm25s.tokenize([r["text"] for r in self._rows], stopwords="en", show_progress=False),
            show_progress=False,
        )

    def search(self, question: str, *, k: int = 10) -> list[Hit]:
        """The ``k`` chunks (fewer if the table is smaller) with the highest BM25 score for ``question``.

        Returns:
            :class:`~diachron.retrieval.search.Hit` rows (``COLUMNS``), best first; ``score`` is the BM25
            score (unbounded, higher is closer; not a cosine). Chunks sharing no term with the question
            score 0.
        """
        import bm25s

        k = min(k, len(self._rows))
        tokens = bm25s.tokenize([question], stopwords="en", show_progress=False)
        ids, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return [Hit(self._rows[int(i)], float(s)) for i, s in zip(ids[0], scores[0], strict=True)]
