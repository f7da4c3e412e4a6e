"""Damaged tables: find them, say so in one line, and roll each back to its last readable version.

A Lance table is a list of versions; each version's manifest names its fragments and their data files with
the size each had when written (``file_size_bytes``). A data file that is missing or has another size (cut
by a full disk, a half-copied backup, a bad restore) makes every read of that version fail deep inside
Lance (``LanceError(IO) … failed to fill whole buffer``). :func:`find_damage` checks each table's latest
version by those sizes (one ``stat`` per data file, no data read); :func:`repair` restores, per damaged
table, the newest earlier version whose files are all whole (Lance ``checkout_version`` + ``restore``: a
new version equal to that one; no file is deleted and no other table is touched).

Errors: :func:`find_damage` and :func:`repair` raise :class:`FileNotFoundError` for a ``db`` that is no
LanceDB directory; :func:`repair` raises :class:`RepairError` when a damaged table has no whole version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diachron.schemas.errors import TerminalError

__all__ = ["Damage", "RepairError", "Repaired", "damage_line", "diagnose", "find_damage", "repair"]


class RepairError(TerminalError, RuntimeError):
    """A damaged table has no earlier version whose data files are all whole: restore it from a backup."""


@dataclass(frozen=True, slots=True)
class Damage:
    """Table ``table`` of a database is damaged at ``version``: ``detail`` says how, in a few words."""

    table: str
    version: int | None
    detail: str


@dataclass(frozen=True, slots=True)
class Repaired:
    """Table ``table`` was rolled back from ``damaged_version`` to ``restored_from`` (now ``new_version``,
    holding ``rows`` rows)."""

    table: str
    damaged_version: int | None
    restored_from: int
    new_version: int
    rows: int


def _root(db: str) -> str:
    """``db`` as an absolute URI (a local path made absolute).

    Raises:
        FileNotFoundError: a local ``db`` that is no directory.
    """
    if "://" in db:
        return db.rstrip("/")
    from pathlib import Path

    if not Path(db).is_dir():
        raise FileNotFoundError(f"no diachron database at {db!r}")
    return str(Path(db).resolve())


def _table_uris(db: str) -> dict[str, str]:
    import lancedb

    root = _root(db)
    names = lancedb.connect(root).list_tables()
    names = getattr(names, "tables", names)
    return {name: f"{root}/{name}.lance" for name in sorted(names)}


def _broken_file(dataset: Any, table_uri: str) -> str | None:
    """The first data file of ``dataset`` (one version) that is missing or has another size, described."""
    from pyarrow import fs as pafs

    filesystem, root = pafs.FileSystem.from_uri(table_uri)
    for fragment in dataset.get_fragments():
        for data in fragment.metadata.files:
            info = filesystem.get_file_info(f"{root}/data/{data.path}")
            if info.type == pafs.FileType.NotFound:
                return f"data file data/{data.path} is missing"
            expected = getattr(data, "file_size_bytes", None)
            if expected and info.size != expected:
                return f"data file data/{data.path} holds {info.size} of its {expected} bytes"
    return None


def _check(table_uri: str, version: int | None = None) -> tuple[int | None, str | None]:
    """``(version, damage)`` of one version of a table (``None``: the latest); damage ``None`` = whole."""
    import lance

    try:
        dataset = lance.dataset(table_uri, version=version)
    except Exception as exc:  # a manifest Lance cannot read: any error of the native reader
        return version, f"its manifest cannot be read ({str(exc).splitlines()[0][:160]})"
    return dataset.version, _broken_file(dataset, table_uri)


def find_damage(db: str) -> list[Damage]:
    """The damaged tables of ``db`` (latest versions checked by file sizes; empty = none found)."""
    found = []
    for name, uri in _table_uris(db).items():
        version, detail = _check(uri)
        if detail:
            found.append(Damage(name, version, detail))
    return found


def damage_line(db: str, damage: list[Damage] | None = None) -> str | None:
    """One line naming ``db``'s damaged tables, the damage and what to do; ``None`` when none is damaged."""
    damage = find_damage(db) if damage is None else damage
    if not damage:
        return None
    what = "; ".join(
        f"table {d.table!r} (version {d.version if d.version is not None else '?'}): {d.detail}"
        for d in damage
    )
    return (
        f"{db} is damaged: {what}. Run `diachron repair {db}` to roll each damaged table back to its last "
        "readable version (later writes to it are dropped; re-run the ingest to redo them), or restore the "
        "database from a backup"
    )


def diagnose(db: str | None) -> str | None:
    """:func:`damage_line` for a local database, never raising: ``None`` when ``db`` is empty, a URL (a
    service or object storage: there the check would cost one request per data file, and a damaged table
    shows as the read error itself), whole, or cannot be checked (the diagnosis must not hide the error
    that led to it)."""
    if not db or "://" in db:
        return None
    try:
        return damage_line(db)
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def _versions(table_uri: str) -> list[int]:
    import lance

    for candidate in (None, 1):  # the latest manifest may be the damaged part: list from the first
        try:
            return sorted(v["version"] for v in lance.dataset(table_uri, version=candidate).versions())
        except Exception:  # noqa: BLE001 - any native read error: try the next way in
            continue
    return []


def repair(db: str) -> list[Repaired]:
    """Roll each damaged table of ``db`` back to its newest whole version (see the module docstring).

    Returns:
        One :class:`Repaired` per table rolled back (empty: nothing was damaged, nothing written).

    Raises:
        FileNotFoundError: ``db`` is no LanceDB directory.
        RepairError: a damaged table has no whole version.
    """
    import lance

    done = []
    for damage in find_damage(db):
        uri = f"{_root(db)}/{damage.table}.lance"
        older = [v for v in _versions(uri) if damage.version is None or v < damage.version]
        good = next((v for v in reversed(older) if _check(uri, v)[1] is None), None)
        if good is None:
            raise RepairError(
                f"table {damage.table!r} of {db} has no readable version ({damage.detail}): "
                "restore it from a backup"
            )
        dataset = lance.dataset(uri, version=good)
        dataset.restore()
        latest = lance.dataset(uri)
        done.append(Repaired(damage.table, damage.version, good, latest.version, latest.count_rows()))
    return done
