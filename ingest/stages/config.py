"""The stages' shared configuration (:class:`StageConfig`), its check, and the annotator it names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StageConfig", "build_annotator", "check_stage_config"]


@dataclass(frozen=True, slots=True)
class StageConfig:
    """Configuration shared by the stages (picklable; sent to every Ray actor).

    Attributes:
        embedder: model name or path (see :func:`diachron.ingest.embedding.resolve_embedder`).
        max_tokens: chunk size in tokens; ``None`` = the embedder's maximum input length.
        annotator: ``rules`` or ``vllm``.
        annotator_options: backend options (e.g. ``{"model": PATH}`` for vllm).
        timezone: IANA zone in which local dates in text are read.
        fiscal_calendar: fiscal calendar in words or short form (``"2:end"``), ``None`` = calendar year.
        date_order: ``auto`` | ``DMY`` | ``MDY``.
        embed_batch_size: texts per forward pass of the embedder.
        embed_threads: torch threads of the embedding actor (``None`` = all cores of its node; Ray would
            otherwise pin an actor with ``num_cpus=1`` to one thread, 0.7x the speed here).
    """

    embedder: str | None = None
    max_tokens: int | None = None
    annotator: str = "rules"
    annotator_options: dict[str, Any] = field(default_factory=dict)
    timezone: str = "UTC"
    fiscal_calendar: str | None = None
    date_order: str = "auto"
    embed_batch_size: int = 32
    embed_threads: int | None = None


def check_stage_config(config: StageConfig) -> Any:
    """Refuse a bad annotator name, time zone or fiscal calendar before any work starts; returns the parsed
    :class:`~diachron.temporal.tagger.FiscalCalendar`.

    Raises:
        ConfigError: unknown backend name, unknown IANA time zone or bad fiscal calendar (one line each).
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from diachron.ingest.errors import ConfigError
    from diachron.temporal.tagger import FiscalCalendar

    if config.annotator not in ("rules", "vllm"):
        raise ConfigError(f"unknown annotator {config.annotator!r}: use 'rules' or 'vllm'")
    try:
        ZoneInfo(config.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {config.timezone!r} for --timezone: use an IANA name such as "
            "'Europe/Berlin' or 'UTC'"
        ) from None
    try:
        return FiscalCalendar.parse(config.fiscal_calendar) if config.fiscal_calendar else FiscalCalendar()
    except ValueError as exc:
        raise ConfigError(
            f"bad fiscal calendar {config.fiscal_calendar!r} for --fiscal-calendar: {exc} (expected "
            "START_MONTH:end|start, e.g. '2:end')"
        ) from None


def build_annotator(config: StageConfig) -> Any:
    """The configured annotator backend.

    Raises:
        ConfigError: unknown backend name, time zone or bad fiscal calendar (:func:`check_stage_config`).
    """
    from diachron.ingest.annotation.rules import RuleAnnotator
    from diachron.temporal.tagger import TaggerConfig

    fiscal = check_stage_config(config)
    tagger = TaggerConfig(timezone=config.timezone, fiscal=fiscal, date_order=config.date_order)  # type: ignore[arg-type]
    if config.annotator == "rules":
        return RuleAnnotator(tagger=tagger)
    from diachron.ingest.annotation.llm import (
        build_llm_annotator,
    )  # "vllm" (check_stage_config refused others)

    return build_llm_annotator(config.annotator_options, fallback=RuleAnnotator(tagger=tagger))
