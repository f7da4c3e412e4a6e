"""The ranking's weights and pool sizes in one place: :class:`RankingWeights` (issues 28 and 31).

Every number the re-ranking uses (:mod:`diachron.retrieval.search`) and the pools the client fetches
(:mod:`diachron.retrieval.client`) is a field here with a named default; nothing else restates them.

Example:
    >>> from diachron.retrieval.weights import RankingWeights
    >>> RankingWeights().rerank_depth(10)
    50
    >>> RankingWeights(temporal=0.0).temporal                # the paper's pure-similarity ranking
    0.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from diachron.schemas.errors import ConfigError

__all__ = ["DEFAULT_WEIGHTS", "RankingWeights"]


@dataclass(frozen=True, slots=True)
class RankingWeights:
    """Weights of the time-filtered re-ranking and the sizes of the pools it re-ranks.

    Ranking score of a candidate (:func:`diachron.retrieval.search.rank`): ``relevance + context ×
    (document's best relevance − relevance) + temporal × fit``, with ``relevance = cosine + lexical × BM25``
    (BM25 scaled to [0, 1] over the pool); a demoted candidate (:mod:`diachron.retrieval.filters`, "Demoted,
    not dropped") has ``demotion`` subtracted.

    Attributes:
        temporal: weight of the temporal fit in [0, 1] (0 = the paper's pure similarity ranking).
        context: weight of the chunk's document context (0 = none).
        lexical: weight of the BM25 signal of the question's core query (0 = none).
        demotion: score subtracted from a demoted chunk (one whose only time outside the window is weak
            evidence, or none); ``math.inf`` (the default, chosen on TimeQA development half A: a finite
            demotion let demoted chunks into the top 10 and cost in-window precision) ranks every demoted
            chunk after every admitted one, each tier by its own score.
        rerank_factor / rerank_min: the time-filtered re-ranking re-ranks the top
            ``max(rerank_factor × k, rerank_min)`` by similarity.
        coverage_factor / coverage_min: ``diversify="coverage"`` re-ranks a pool of
            ``max(coverage_factor × k, coverage_min)``.
        current_factor / current_min: a "current / latest" question orders a pool of
            ``max(current_factor × k, current_min)`` by publication.

    Raises:
        ConfigError: a weight is negative or NaN, or a pool size below 1 (the message names the field).
    """

    temporal: float = 0.1
    context: float = 0.75
    lexical: float = 0.1
    demotion: float = math.inf
    rerank_factor: int = 3
    rerank_min: int = 50
    coverage_factor: int = 5
    coverage_min: int = 100
    current_factor: int = 2
    current_min: int = 20

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"RankingWeights.{f.name} must be a number, got {value!r}", setting=f.name)
            if f.type == "int" and (not isinstance(value, int) or value < 1):
                raise ConfigError(
                    f"RankingWeights.{f.name} must be an integer >= 1, got {value!r}", setting=f.name
                )
            if math.isnan(value) or value < 0:
                raise ConfigError(f"RankingWeights.{f.name} must be >= 0, got {value!r}", setting=f.name)

    def rerank_depth(self, k: int) -> int:
        """Candidates the time-filtered re-ranking scores for a top-``k``."""
        return max(self.rerank_factor * k, self.rerank_min)

    def coverage_depth(self, k: int) -> int:
        """Pool of ``diversify="coverage"`` for a top-``k``."""
        return max(self.coverage_factor * k, self.coverage_min)

    def current_depth(self, k: int) -> int:
        """Pool of a "current / latest" question for a top-``k``."""
        return max(self.current_factor * k, self.current_min)

    def override(self, **values: float | int | None) -> RankingWeights:
        """A copy with the fields given (not ``None``) replaced; ``self`` when none is (validated again)."""
        given = {name: v for name, v in values.items() if v is not None}
        return replace(self, **given) if given else self

    def to_dict(self) -> dict[str, float | int]:
        """The fields as a plain dict (for traces and reports)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: the defaults, shared by every client and searcher built without weights.
DEFAULT_WEIGHTS = RankingWeights()
