"""Human-readable times: moved to :mod:`diachron.schemas.display` (below the retrieval layer, which words
answers with it); this name stays for the CLI and existing callers."""

from diachron.schemas.display import human_instant, human_interval

__all__ = ["human_instant", "human_interval"]
