"""LLM backends for the ``vllm`` annotator: one batched chat call with a JSON schema, two transports.

- :class:`RayVLLMBackend`: the offline ``vllm.LLM`` engine inside a Ray actor (``num_gpus`` per engine on
  GPU workers; ``0`` runs the CPU build). The actor may run another Python (``python=``, Ray's
  ``runtime_env`` ``py_executable``), so CUDA vLLM lives in the GPU workers' environment, not the driver's.
- :class:`OpenAIHTTPBackend`: an OpenAI-compatible server by URL (``python -m vllm.entrypoints.openai.api_server``),
  shared by several pipelines; timeouts in seconds, transient failures retried with backoff (tenacity).

Both return one :class:`Completion` per request, in order, and enforce the schema by vLLM structured
outputs (guided decoding). vLLM is imported inside the engine only: this module imports without it.

Errors: :class:`LLMBackendError` (transient: the engine or server failed; retry the task).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from diachron.schemas.errors import TransientError

__all__ = [
    "Completion",
    "LLMBackend",
    "LLMBackendError",
    "OpenAIHTTPBackend",
    "RayVLLMBackend",
    "VLLMEngine",
    "build_backend",
]

log = logging.getLogger(__name__)

Messages = list[dict[str, str]]


class LLMBackendError(TransientError):
    """The LLM engine or server failed for a whole batch (not a bad answer). Retry the task."""


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer: ``text`` (the JSON string), ``finish_reason`` (``stop`` | ``length`` | …), ``tokens`` generated."""

    text: str
    finish_reason: str | None
    tokens: int


class LLMBackend(Protocol):
    """``generate(conversations, schema=, max_tokens=, temperature=)`` -> one :class:`Completion` per conversation."""

    model_name: str

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]: ...


class VLLMEngine:
    """The offline ``vllm.LLM`` engine (continuous batching over the whole list of conversations).

    Args:
        model: HF model directory or hub name.
        max_model_len: context length in tokens (prompt + answer).
        max_num_seqs: most sequences decoded together (the engine's batch size).
        gpu_memory_utilization: fraction of device memory for weights + KV cache (the CPU build reads it
            as a share of RAM; 0.3 here, ≈0.9 on a dedicated GPU).
        dtype: ``bfloat16`` on CPU, ``auto`` on GPU.
        enforce_eager: no CUDA graphs (required by the CPU build, faster start-up).
        tensor_parallel_size: GPUs per engine.

    Raises:
        ImportError: vLLM is not installed in this Python.
    """

    def __init__(
        self,
        model: str,
        *,
        max_model_len: int = 2048,
        max_num_seqs: int = 16,
        gpu_memory_utilization: float = 0.3,
        dtype: str = "bfloat16",
        enforce_eager: bool = True,
        tensor_parallel_size: int = 1,
    ) -> None:
        from vllm import LLM

        self.llm = LLM(
            model=model,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            gpu_memory_utilization=gpu_memory_utilization,
            dtype=dtype,
            enforce_eager=enforce_eager,
            tensor_parallel_size=tensor_parallel_size,
        )

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=temperature,
            structured_outputs=StructuredOutputsParams(json=schema),
        )
        outputs = self.llm.chat(list(conversations), params, use_tqdm=False)
        return [
            Completion(o.outputs[0].text, o.outputs[0].finish_reason, len(o.outputs[0].token_ids))
            for o in outputs
        ]

    def shutdown(self) -> None:
        """Stop the engine core and its worker processes (killing the actor alone can orphan them)."""
        self.llm.llm_engine.engine_core.shutdown()


class RayVLLMBackend:
    """:class:`VLLMEngine` in one Ray actor; ``generate`` blocks until the batch is done.

    Args:
        model: HF model directory (on every worker) or hub name.
        num_gpus: GPUs reserved for the actor (``0`` on CPU).
        num_cpus: CPUs reserved for the actor.
        python: interpreter for the actor (a venv with vLLM, same Python and Ray versions), ``None`` = the
            driver's.
        timeout_s: most seconds one batch may take.
        engine: keyword arguments of :class:`VLLMEngine`.

    Raises:
        LLMBackendError: the actor died or the batch timed out.
    """

    def __init__(
        self,
        model: str,
        *,
        num_gpus: float = 0,
        num_cpus: float = 1,
        python: str | None = None,
        timeout_s: float = 600,
        model_name: str | None = None,
        **engine: Any,
    ) -> None:
        import ray

        runtime_env = {"py_executable": python} if python else None
        actor = ray.remote(num_gpus=num_gpus, num_cpus=num_cpus, runtime_env=runtime_env)(VLLMEngine)
        self.actor = actor.remote(model, **engine)
        self.timeout_s = timeout_s
        self.model_name = model_name or model

    def generate(
        self,
        conversations: Sequence[Messages],
        *,
        schema: dict[str, Any],
        max_tokens: int,
        temperature: float,
    ) -> list[Completion]:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        ref = self.actor.generate.remote(
            list(conversations), schema=schema, max_tokens=max_tokens, temperature=temperature
        )
        try:
            return ray.get(ref, timeout=self.timeout_s)
        except (GetTimeoutError, RayActorError) as exc:
            raise LLMBackendError(f"vLLM actor failed for {self.model_name}: {exc}") from exc

    def close(self) -> None:
        """Stop the engine, then kill the actor (frees the engine's memory)."""
        import ray

        try:
            ray.get(self.actor.shutdown.remote(), timeout=60)
        finally:
            ray.kill(self.actor)


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


def build_backend(options: dict[str, Any]) -> LLMBackend:
    """A backend from options: ``url`` given -> :class:`OpenAIHTTPBackend`, else :class:`RayVLLMBackend`.

    Options: ``model`` (required), ``url``, ``served_model`` (HTTP model name, default ``model``),
    ``timeout_s``, ``retries``, ``concurrency``, ``api_key`` (HTTP); ``num_gpus`` (default 0),
    ``num_cpus`` (default 0: the engine's threads are not reserved, so it schedules beside the ingest
    stages on a small machine; set 1+ on GPU workers), ``python`` and the :class:`VLLMEngine` keywords
    (Ray). Unknown keys are an error.

    Raises:
        ConfigError: no ``model``, an unknown key, or a value of the wrong type.
    """
    from diachron.schemas.errors import ConfigError

    opts = dict(options)
    model = opts.pop("model", None)
    if not model:
        raise ConfigError("the vllm annotator needs a model: pass --model PATH (a Hugging Face directory)")
    http = "url" in opts
    keys = (
        {
            "url": str,
            "served_model": str,
            "timeout_s": float,
            "retries": int,
            "concurrency": int,
            "api_key": str,
        }
        if http
        else {"num_gpus": float, "num_cpus": float, "python": str, "timeout_s": float, **_ENGINE_KEYS}
    )
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
    kwargs.setdefault("num_cpus", 0)
    return RayVLLMBackend(model, **kwargs)
