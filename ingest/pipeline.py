"""The ingest pipeline: sources -> shards -> Ray Data (parse, plan, annotate, embed, validate) -> LanceDB.

One entry point, :func:`run_ingest`, shared by the CLI, the Airflow DAGs and the tests. The driver cuts the
sources into shards (sizes and names only); Ray workers parse them and stage the documents
(:mod:`diachron.ingest.reading`); one Ray task plans versions on a text-free projection and the workers
join the plan back onto the documents (:mod:`diachron.ingest.planning`); the stages run in parallel actor
pools sized from the cluster (a local Ray, or the cluster at ``IngestConfig.ray_address`` /
``RAY_ADDRESS``); workers write the rows as staged Lance fragments; the driver commits the run once (one
transaction per table, rows in ``event_start`` order, each merged by a Ray task on the driver's node) and
writes its ``runs`` row. The driver holds fragment metadata, ids and counts, never the texts: its memory
is flat in corpus size.
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from diachron.ingest.embedding import resolve_embedder
from diachron.ingest.errors import EmbedderMismatchError, WorkerLostError
from diachron.ingest.planning import plan_staged, planned_block, stored_versions
from diachron.ingest.preflight import check_database
from diachron.ingest.reading import INCOMING_SCHEMA, cluster_cpus, read_sources
from diachron.ingest.sources import SOTU_DEFAULT_YEARS, SourceLimits, source_shards
from diachron.ingest.stages import (
    AnnotateStage,
    EmbedStage,
    StageConfig,
    ValidateStage,
    check_stage_config,
    stage_block,
)
from diachron.ingest.staging import Staging, merge_run_table
from diachron.ingest.store import Store
from diachron.ingest.validation import ValidationConfig
from diachron.ingest.versioning import LineageConfig

__all__ = ["Accounting", "IngestConfig", "RunContext", "RunSummary", "run_ingest", "stored_versions"]

log = logging.getLogger(__name__)

Progress = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class IngestConfig:
    """Configuration of one ingest run (resolved once at the edge: CLI flags, DAG params, env; frozen).

    Attributes:
        db_uri: LanceDB URI (local directory or object store, e.g. ``s3://bucket/path``).
        stages: stage configuration (embedder, chunk size, annotator, time zone, fiscal calendar).
        validation: interval bounds for validation.
        sotu_years: inclusive year slice of the ``sotu`` source; ``None`` = the whole corpus.
        ray_address: an existing Ray cluster (``None`` = ``RAY_ADDRESS``, else start or reuse a local Ray).
        num_cpus: CPUs for a local Ray (``None`` = all).
        batch_size: documents per Ray batch.
        optimize: compact tables and rebuild scalar indexes after writing.
        storage_options: object-store options for ``db_uri`` (``endpoint``, ``allow_http``,
            ``aws_access_key_id`` …), passed to LanceDB/Lance on the driver and the workers.
        embed_actors: ``(min, max)`` embed actors; ``None`` = from the cluster (min: one per node with
            CPUs or GPUs, max: all of its CPUs or GPUs).
        limits: caps on source records (:class:`~diachron.ingest.sources.SourceLimits`).
        lineage: which record fields carry series, version, supersedes
            (:class:`~diachron.ingest.versioning.LineageConfig`).
    """

    db_uri: str
    stages: StageConfig = field(default_factory=StageConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    sotu_years: tuple[int, int] | None = SOTU_DEFAULT_YEARS
    ray_address: str | None = None
    num_cpus: int | None = None
    batch_size: int = 16
    optimize: bool = True
    storage_options: dict[str, str] | None = None
    embed_actors: tuple[int, int] | None = None
    limits: SourceLimits = field(default_factory=SourceLimits)
    lineage: LineageConfig = field(default_factory=LineageConfig)


@dataclass(slots=True)
class Accounting:
    """Outcomes of a run's records: for documents and for chunks, seen = written + quarantined + unchanged."""

    documents_seen: int = 0
    documents_written: int = 0
    documents_quarantined: int = 0
    documents_unchanged: int = 0
    chunks_seen: int = 0
    chunks_written: int = 0
    chunks_quarantined: int = 0
    chunks_unchanged: int = 0


@dataclass(slots=True)
class RunSummary:
    """What a run did: counts, wall time (seconds) and the run id recorded in ``runs``.

    ``documents_seen`` counts every source record (rejected ones too): ``documents_seen ==
    documents_written + documents_quarantined + documents_unchanged``, and likewise for chunks.
    ``quarantined`` is the number of quarantine rows this run added (a bad record already quarantined
    by an earlier run is counted in ``documents_quarantined`` but adds no row). ``replaced``: rows of
    dead (killed) runs this run rewrote. ``embed_nodes``: Ray nodes the embed stage ran on.
    """

    run_id: str
    documents_seen: int
    documents_unchanged: int
    documents_written: int
    chunks_written: int
    quarantined: int
    seconds: float
    status: str = "success"
    documents_quarantined: int = 0
    chunks_seen: int = 0
    chunks_unchanged: int = 0
    chunks_quarantined: int = 0
    replaced: int = 0
    embed_nodes: int = 0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_written / self.seconds if self.seconds else 0.0


def _ensure_ray(address: str | None, num_cpus: int | None) -> None:
    import os

    import ray

    if ray.is_initialized():
        return
    # Ray's own notices are not the user's business here: "token authentication is enabled" (it stays on)
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "ignore_reinit_error": True,
        "logging_level": logging.WARNING,
        "log_to_driver": True,
    }
    address = address or os.environ.get("RAY_ADDRESS") or None
    # Lance's Rust log ("No existing dataset … it will be created" per staged fragment) off in the workers
    # too: a local Ray inherits this process's environment, a cluster's workers get it through the job's
    # runtime_env
    lance_log = os.environ.setdefault("LANCE_LOG", "error")
    if address:
        ray.init(address=address, runtime_env={"env_vars": {"LANCE_LOG": lance_log}}, **kwargs)
    else:
        ray.init(num_cpus=num_cpus, **kwargs)


def _check_embedder(store: Store, embedder_id: str) -> None:
    runs = store.table("runs")
    if runs.count_rows() == 0:
        return
    used = set(runs.to_lance().to_table(columns=["embedder"]).column("embedder").to_pylist())
    used.discard("")
    if used and used != {embedder_id}:
        raise EmbedderMismatchError(
            f"store {store.uri} was built with {sorted(used)}, not {embedder_id}; "
            "use the same embedder or a new database",
            uri=str(store.uri),
            expected=sorted(used),
            found=embedder_id,
        )


def run_ingest(
    sources: list[str],
    config: IngestConfig,
    *,
    progress: Progress | None = None,
    clock: Callable[[], datetime] | None = None,
) -> RunSummary:
    """Ingest ``sources`` into the store at ``config.db_uri``; the run's rows become visible together.

    Ray workers read the sources in shards and stage the documents, one Ray task plans versions on their
    ids, hashes and lineage fields (no texts), and workers annotate, embed and validate the planned ones
    and write their rows as staged Lance fragments (:mod:`diachron.ingest.staging`): neither the source
    documents nor the stages' output pass through the driver, which receives fragment metadata and
    counts only; the commits and the optimize step run in Ray tasks on the driver's node that it waits
    for. Sources must be readable by the workers (a path every node sees). Then the driver commits the run:
    the ``runs`` marker, ``documents``, ``chunks`` (in ``event_start`` order), ``quarantine``, the final
    ``runs`` row — one transaction per table, every row stamped with the commit time (see
    :mod:`diachron.ingest.store` for how a run killed between two commits is repaired by the next).

    Accounting (in the summary and in the ``runs`` row's ``config_json["accounting"]``): for documents,
    ``documents_seen`` (every source record) = ``documents_written`` + ``documents_quarantined`` +
    ``documents_unchanged``; for chunks, ``chunks_seen`` = ``chunks_written`` + ``chunks_quarantined`` +
    ``chunks_unchanged``. A document or chunk another (concurrent) run committed first counts as unchanged.

    Args:
        sources: source specs (see :func:`diachron.ingest.sources.load_source`).
        config: run configuration.
        progress: optional callback ``(event, info)``: ``loaded`` (``documents``, ``rejected``: counts of the
            parsed sources), ``planned`` (``todo``, ``unchanged``), ``batch`` (per staged block:
            ``documents_done``, ``documents_total``, ``chunks_staged``), ``committed``
            (after each commit, ``info["table"]`` in ``runs:begin``, ``documents``, ``chunks``,
            ``quarantine``, ``runs``), ``done``.
        clock: transaction-time clock (default: current UTC time); injectable for tests.

    Returns:
        A :class:`RunSummary`; the same counts are in the ``runs`` row.

    Raises:
        ConfigError: an unknown annotator, time zone or bad fiscal calendar in ``config.stages`` (terminal).
        SourceError: a source path is missing or of unknown format (terminal).
        EmbedderMismatchError: the store was built by another embedder (terminal).
        WorkerLostError: Ray lost a worker (transient: retry).
        StoreConflictError: a LanceDB commit failed (transient: retry).
    """
    run, shards = _open_run(sources, config, progress, clock)
    try:
        staged = _stage_run(run, shards)
        summary = _commit(run, staged)
    finally:
        run.staging.drop()
    summary.embed_nodes = len(staged.nodes)
    if config.optimize and (summary.documents_written or summary.chunks_written):
        _beside_driver(optimize_store, config.db_uri, run.spec.dim, config.storage_options)
    else:
        run.store.ensure_indexes()
    run.emit("done", asdict(summary))
    return summary


@dataclass(frozen=True, slots=True)
class RunContext:
    """What every step of one run shares, from its start to its ``runs`` row (built by :func:`_open_run`).

    Attributes:
        run_id: the run's id (16 hex digits), recorded on every row it writes.
        sources: the source specs as given.
        config: the run's configuration.
        spec: the embedder (``id``, ``dim``).
        store: the target store; ``staging``: the run's staged fragments.
        dead: runs found dead (killed) at the start, whose rows this run replaces.
        started: the run's start (UTC); the placeholder ``recorded_at`` of staged rows.
        now: the transaction-time clock; ``emit``: the progress callback; ``t0``: ``perf_counter`` at start.
    """

    run_id: str
    sources: list[str]
    config: IngestConfig
    spec: Any
    store: Store
    staging: Staging
    dead: set[str]
    started: datetime
    now: Callable[[], datetime]
    emit: Progress
    t0: float

    def run_row(self, finished: datetime, acc: Accounting, quarantined: int) -> dict[str, Any]:
        """The run's ``runs`` row with these counts."""
        return _run_row(self, finished, acc, quarantined)


@dataclass(slots=True)
class StagedRun:
    """What a run staged before its commit: fragment metadata per table and the counts so far."""

    fragments: dict[str, list[str]]
    acc: Accounting
    staged_docs: int = 0
    nodes: set[str] = field(default_factory=set)


def _open_run(
    sources: list[str],
    config: IngestConfig,
    progress: Progress | None,
    clock: Callable[[], datetime] | None,
) -> tuple[RunContext, list[dict[str, Any]]]:
    """Check the settings and the store, start Ray, cut the sources into shards; the run's context.

    Raises:
        ConfigError, SourceError, DatabaseRefusedError, EmbedderMismatchError: see :func:`run_ingest`.
    """
    now = clock or (lambda: datetime.now(UTC))
    t0, started, run_id = time.perf_counter(), now(), uuid.uuid4().hex[:16]
    check_stage_config(config.stages)  # a bad --timezone / --fiscal-calendar / annotator: before Ray starts
    _ensure_ray(config.ray_address, config.num_cpus)  # before LanceDB: no fork after LanceDB (STACK_NOTES)
    spec = resolve_embedder(config.stages.embedder)
    # a file, read-only or foreign --db: refused now
    check_database(config.db_uri, dim=spec.dim, storage_options=config.storage_options)
    shards = [shard for source in sources for shard in source_shards(source, sotu_years=config.sotu_years)]
    store = Store(config.db_uri, dim=spec.dim, storage_options=config.storage_options)
    _check_embedder(store, spec.id)
    store.table("documents")  # created here, not by a worker
    dead = store.dead_runs(now=now())
    staging = Staging(config.db_uri, run_id, config.storage_options)
    emit = progress or (lambda event, info: None)
    run = RunContext(run_id, sources, config, spec, store, staging, dead, started, now, emit, t0)
    return run, shards


def _stage_run(run: RunContext, shards: list[dict[str, Any]]) -> StagedRun:
    """Read, plan, annotate, embed and validate the run's documents into staged fragments (no commit)."""
    config = run.config
    _quiet_ray_data()
    read = read_sources(
        shards,
        limits=config.limits,
        lineage=config.lineage,
        staging=run.staging,
        run_id=run.run_id,
        started=run.started,
    )
    run.emit("loaded", {"documents": read["documents"], "rejected": read["rejected"]})
    plan, info = _plan(read, run)
    run.emit("planned", {"todo": info["todo"], "unchanged": info["unchanged"]})
    acc = Accounting(
        documents_seen=read["documents"] + read["rejected"],
        documents_unchanged=info["unchanged"],
        documents_quarantined=read["rejected"] + info["duplicates"],
    )  # lineage notes: still written
    fragments = {"documents": [], "chunks": [], "quarantine": read["quarantine"] + info["quarantine"]}
    staged = StagedRun(fragments, acc)
    if info["todo"]:
        for part in _run_stages(plan, info["todo"], run):
            _add_part(staged, part)
    return staged


def _add_part(staged: StagedRun, part: dict[str, Any]) -> None:
    """Fold one staged block's fragment metadata and counts (from :func:`stage_block`) into ``staged``."""
    for name in staged.fragments:
        staged.fragments[name] += json.loads(part[name])
    staged.acc.chunks_seen += part["chunks_in"]
    staged.acc.chunks_quarantined += part["chunks_rejected"]
    staged.acc.documents_quarantined += part["documents_failed"]
    staged.staged_docs += part["documents_staged"]
    staged.nodes.update(json.loads(part["embed_nodes"]))


def _commit(run: RunContext, staged: StagedRun) -> RunSummary:
    """Commit the run: marker, documents, chunks (time order), quarantine, final ``runs`` row (one run at a
    time: :meth:`~diachron.ingest.store.Store.commit_lock`)."""
    with run.store.commit_lock():
        commit_time = run.now()
        run.store.begin_run(run.run_row(commit_time, staged.acc, 0), now=commit_time)
        try:
            return _commit_tables(run, staged, commit_time)
        except BaseException:
            # an error (not a kill) between two commits: mark the run failed now, so the retry repairs its
            # rows without waiting for the lease (a SIGKILL is caught by the pid check instead)
            try:
                run.store.mark_failed({run.run_id})
            except Exception:  # noqa: BLE001 - the original error matters more
                log.warning("could not mark run %s failed", run.run_id)
            raise


def _commit_tables(run: RunContext, staged: StagedRun, commit_time: datetime) -> RunSummary:
    """Merge the staged ``documents``, ``chunks``, ``quarantine`` fragments, then the final ``runs`` row."""
    run.emit("committed", {"table": "runs:begin"})
    merged: dict[str, dict[str, int]] = {}
    for name in ("documents", "chunks", "quarantine"):
        merged[name] = _beside_driver(
            merge_run_table,
            name,
            staged.fragments[name],
            staging=run.staging,
            db_uri=run.config.db_uri,
            dim=run.spec.dim,
            recorded_at=commit_time,
            replace_runs=run.dead,
            run_id=run.run_id,
        )
        run.emit("committed", {"table": name, **merged[name]})
    summary = _summary(run, staged, merged)
    run.store.finish_run(run.run_row(run.now(), staged.acc, summary.quarantined))
    run.store.mark_failed(run.dead)
    run.emit("committed", {"table": "runs"})
    return summary


def _summary(run: RunContext, staged: StagedRun, merged: dict[str, dict[str, int]]) -> RunSummary:
    """The run's summary from the merge counts (completes ``staged.acc``)."""
    acc = staged.acc

    def written(name: str) -> int:
        return merged[name]["inserted"] + merged[name]["replaced"]

    acc.documents_written = written("documents")
    acc.documents_unchanged += staged.staged_docs - acc.documents_written
    acc.chunks_written = written("chunks")
    acc.chunks_unchanged = acc.chunks_seen - acc.chunks_quarantined - acc.chunks_written
    return RunSummary(
        run.run_id,
        acc.documents_seen,
        acc.documents_unchanged,
        acc.documents_written,
        acc.chunks_written,
        written("quarantine"),
        time.perf_counter() - run.t0,
        documents_quarantined=acc.documents_quarantined,
        chunks_seen=acc.chunks_seen,
        chunks_unchanged=acc.chunks_unchanged,
        chunks_quarantined=acc.chunks_quarantined,
        replaced=merged["documents"]["replaced"] + merged["chunks"]["replaced"],
    )


def optimize_store(db_uri: str, dim: int, storage_options: dict[str, str] | None) -> None:
    """:meth:`~diachron.ingest.store.Store.optimize` (a Ray task beside the driver: the time index build
    reads every chunk's times and vectors)."""
    Store(db_uri, dim=dim, storage_options=storage_options).optimize()


def _beside_driver(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` as a Ray task on the driver's node (its files, its commit lock) and return its result.

    The commit and optimize steps read every row of the run: in a worker, the driver's memory stays flat in
    corpus size. No CPU slot (the pools' actors may hold them all); no retry (a failed commit is repaired by
    the next run). The task's own exception is raised here; an interrupt cancels the task first.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    ref = _remote(fn).options(num_cpus=0, max_retries=0, scheduling_strategy=here).remote(*args, **kwargs)
    try:
        return ray.get(ref)
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
        raise WorkerLostError(f"the Ray worker of {fn.__name__} was lost: {exc}") from exc
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause if isinstance(exc.cause, BaseException) else None
        if cause is not None:
            raise cause from None
        raise
    except BaseException:
        ray.cancel(ref, force=True)
        raise


@functools.cache
def _remote(fn: Callable[..., Any]) -> Any:
    """``ray.remote(fn)``, made once per process (Ray warns about a function exported again and again)."""
    import ray

    return ray.remote(fn)


def _pools(config: IngestConfig) -> dict[str, Any]:
    """Actor pools sized from the cluster (``ray.cluster_resources``, ``ray.nodes``).

    Embed: one actor per GPU when the cluster has GPUs (``num_gpus=1``); else at least one per node with
    CPUs, spread over the nodes, up to one per CPU but one (the light stages need room), each asking for
    half a CPU so the light stages fit beside it (torch inside uses the node's cores,
    ``StageConfig.embed_threads``).
    Annotate scales to half the CPUs; validate to one per node.
    """
    import ray

    resources = ray.cluster_resources()
    nodes = _cpu_nodes()
    cpus = max(1, int(resources.get("CPU", 1)))
    gpus = int(resources.get("GPU", 0))
    from ray.data import ActorPoolStrategy

    def pool(low: int, high: int) -> ActorPoolStrategy:
        return ActorPoolStrategy(min_size=low, max_size=max(low, high), max_tasks_in_flight_per_actor=2)

    if gpus:
        embed: dict[str, Any] = {
            "num_gpus": 1,
            "num_cpus": 0.5,
            "compute": pool(*(config.embed_actors or (1, gpus))),
        }
    else:
        low = max(1, len(nodes))
        embed = {"num_cpus": 0.5, "compute": pool(*(config.embed_actors or (low, cpus - 1)))}
    # SPREAD: two half-CPU embed actors would otherwise pack onto one node (measured: one node embedded). Ray
    # 2.60 takes a scheduling strategy only through this (deprecated, removed in 2.64) hook.
    embed["ray_remote_args_fn"] = _spread
    return {
        "annotate": {"num_cpus": 0.25, "compute": pool(1, cpus // 2)},
        "embed": embed,
        "validate": {"num_cpus": 0.25, "compute": pool(1, len(nodes))},
    }


def _cpu_nodes() -> list[dict[str, Any]]:
    """The cluster's live nodes that have CPUs (``ray.nodes``)."""
    import ray

    return [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]


def _spread() -> dict[str, Any]:
    return {"scheduling_strategy": "SPREAD"}


def _quiet_ray_data() -> None:
    """Ray Data's notices are not the user's ("Progress bars disabled", "execution finished", precision)."""
    import warnings

    import ray.data

    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # warnings (e.g. "may hang") still shown
    for name in ("ray.data._internal.progress", "ray.data._internal.tensor_extensions.arrow"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message="no explicit representation of timezones", category=UserWarning)
    warnings.filterwarnings("ignore", message="`ray_remote_args_fn` is deprecated")


def _plan(read: dict[str, Any], run: RunContext) -> tuple[Any, dict[str, Any]]:
    """Commit the staged ``incoming`` documents, plan them in one Ray task; ``(plan ObjectRef, counts)``."""
    import ray

    empty = {"todo": 0, "unchanged": 0, "duplicates": 0, "quarantine": []}
    if not read["incoming"]:
        return None, empty
    run.staging.commit("incoming", read["incoming"], INCOMING_SCHEMA)
    task = ray.remote(plan_staged).options(num_returns=2, num_cpus=0, max_retries=2)
    plan, info = task.remote(
        run.staging.uri("incoming"),
        run.config.db_uri,
        run.spec.dim,
        run.config.storage_options,
        run.dead,
        run.staging,
        run.run_id,
        run.started,
    )
    return plan, ray.get(info)


def _configure_data_context() -> None:
    """Ray Data's execution options for the stages (see the comments for what was measured)."""
    import warnings

    import ray.data

    ctx = ray.data.DataContext.get_current()
    # on several nodes, start every pool's minimum actors (one embed actor per node) before data flows, or the
    # first actor ready takes the whole (small) input and the other nodes idle; Ray Data then starts the pools
    # one after another (each operator waits for its own). On one node there is nothing to spread: the pools
    # start together while the first blocks are read (measured: the three stage actors' set-ups took 3.3 +
    # 5.4 + 4.0 s one after another before the first block moved)
    ctx.wait_for_min_actors_s = 900 if len(_cpu_nodes()) > 1 else -1
    # the least busy actor takes the next block, wherever the block is: with locality on, the actor beside
    # the annotate actor took every block a small run makes (one node embedded, the others idled)
    with warnings.catch_warnings():  # "deprecated ... Ray Data manages actor locality": still read in 2.60
        warnings.simplefilter("ignore")
        ctx.execution_options.actor_locality_enabled = False


def _stage_dataset(plan: Any, total: int, run: RunContext) -> Any:
    """The Ray Data plan of the stages: planned blocks -> annotate -> embed -> validate -> staged block.

    Each stage is a callable class built once per actor of its pool (:func:`_pools`); the input is the
    plan's ``total`` documents in blocks of ``batch_size``, read by the workers from the staged ``incoming``.
    """
    import ray.data

    config, staging = run.config, run.staging
    pools = _pools(config)
    blocks = -(-total // config.batch_size)
    ds = ray.data.from_items([{"block": k} for k in range(blocks)], override_num_blocks=blocks)
    # no CPU slot (the pools' minimum actors may hold every CPU: two concurrent runs on a 2-CPU Ray do, and
    # a task waiting for a CPU would wait forever), a few at a time
    block_input = {
        "plan": plan,
        "incoming_uri": staging.uri("incoming"),
        "storage_options": staging.storage_options,
        "batch_size": config.batch_size,
    }
    ds = ds.map_batches(
        planned_block,
        fn_kwargs=block_input,
        batch_format="pyarrow",
        batch_size=1,
        num_cpus=0,
        compute=ray.data.TaskPoolStrategy(size=min(blocks, cluster_cpus())),
    )
    annotate = config.stages
    if annotate.annotator == "vllm":  # its questions first: through Ray Data LLM, batched across the run
        from diachron.ingest.annotation.llm import precompute_answers

        annotate = replace(annotate, annotator_options=precompute_answers(ds, annotate))
    stages = [
        (AnnotateStage, (annotate, staging, run.run_id, run.started), config.batch_size, "annotate"),
        (EmbedStage, (config.stages,), config.stages.embed_batch_size * 4, "embed"),
        (ValidateStage, (config.validation,), 256, "validate"),
    ]
    for stage, args, size, pool in stages:
        ds = ds.map_batches(
            stage, fn_constructor_args=args, batch_format="pyarrow", batch_size=size, **pools[pool]
        )
    block_output = {
        "staging": staging,
        "run_id": run.run_id,
        "embedder_id": run.spec.id,
        "dim": run.spec.dim,
        "placeholder_time": run.started,
    }
    # I/O only: fits beside full actors
    return ds.map_batches(
        stage_block, fn_kwargs=block_output, batch_format="pyarrow", batch_size=None, num_cpus=0
    )


def _run_stages(plan: Any, total: int, run: RunContext) -> Iterator[dict[str, Any]]:
    """Run the stages on the planned documents; yields one small dict per output block (fragment metadata
    and counts). The staged ``incoming`` documents are read by the workers and joined with ``plan``."""
    import ray

    _configure_data_context()
    ds = _stage_dataset(plan, total, run)
    done = chunks = 0
    try:
        for part in ds.iter_rows():
            done += part["documents_staged"] + part["documents_failed"]
            chunks += part["chunks_in"]
            # chunks_written: chunks processed so far (kept for progress bars); they are committed at the end
            run.emit(
                "batch",
                {
                    "chunks_staged": chunks,
                    "chunks_written": chunks,
                    "documents_done": done,
                    "documents_total": total,
                },
            )
            yield part
    except ray.exceptions.RayActorError as exc:
        raise WorkerLostError(f"a Ray worker was lost: {exc}") from exc


def _run_row(run: RunContext, finished: datetime, acc: Accounting, quarantined: int) -> dict[str, Any]:
    settings = asdict(run.config)
    settings.pop("storage_options", None)  # may hold credentials
    return {
        "run_id": run.run_id,
        "started_at": run.started,
        "finished_at": finished,
        "sources_json": json.dumps(run.sources),
        "config_json": json.dumps({**settings, "accounting": asdict(acc)}, default=str),
        "embedder": run.spec.id,
        "embedding_dim": run.spec.dim,
        "documents_seen": acc.documents_seen,
        "documents_written": acc.documents_written,
        "chunks_written": acc.chunks_written,
        "quarantined": quarantined,
        "status": "success",
    }
