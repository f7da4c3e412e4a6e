"""The release-notes converter and question generator (bench/eval/changelog.py), and the TimeQA halves."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest

from bench.eval.changelog import PATTERNS, convert, documents, half_of, make_questions

NEWS = """News for the tz database

Release 2022f - 2022-10-28 18:04:57 -0700

  Mexico will no longer observe DST after 2022.

Release 2022e - 2022-10-11 11:13:02 -0700

  Jordan and Syria switch to permanent +03.

Release 2022a - 2022-03-15 23:02:01 -0700

  Palestine will spring forward on 2022-03-27.
"""

KEEP = """# Changelog

## [Unreleased]
- nothing yet

## [1.2.0] - 2024-05-01
### Added
- time travel

## [1.1.0] - 2024-03-10
### Fixed
- a bug
"""


def test_release_headings_split_sections_and_read_the_offset() -> None:
    releases = convert(NEWS)
    assert [r.version for r in releases] == ["2022f", "2022e", "2022a"]
    # 18:04:57 -0700 is 01:04:57 UTC the next day
    assert releases[0].published_at == datetime(2022, 10, 29, 1, 4, 57, tzinfo=UTC)
    assert releases[1].text.startswith("Release 2022e") and "Jordan" in releases[1].text
    assert "Mexico" not in releases[1].text and "Palestine" not in releases[1].text
    docs = documents(releases, "tz")
    assert [d["supersedes"] for d in docs] == ["2022e", "2022a", None]
    assert docs[0]["doc_id"] == "tz-release/2022f" and docs[0]["series_id"] == "tz-releases"


def test_keep_a_changelog_headings_skip_unreleased() -> None:
    releases = convert(KEEP, PATTERNS["keep-a-changelog"])
    assert [(r.version, r.published_at.date().isoformat()) for r in releases] == [
        ("1.2.0", "2024-05-01"),
        ("1.1.0", "2024-03-10"),
    ]
    assert "time travel" in releases[0].text and "a bug" not in releases[0].text
    with pytest.raises(ValueError, match="no release heading"):
        convert(KEEP)  # the default pattern reads no Keep-a-Changelog heading


def test_questions_are_generated_from_the_releases_with_their_gold() -> None:
    qs = {q["qid"]: q for q in make_questions(convert(NEWS), "tz")}
    # 2022a (Mar 16 06:02 UTC) .. 2022e (Oct 11 18:13 UTC): 209.5 days, halfway Mar 16 + 104.8 d = Jun 29
    assert qs["current/2022a"]["question"] == "Which tz version was current on 29 June 2022?"
    assert qs["current/2022a"]["gold_doc_ids"] == ["tz-release/2022a"]
    assert qs["current-ago/2022a"]["now"].startswith("2022-07-29")  # Jun 29 12:00 + 30 days
    assert qs["between/2022f"]["question"] == "What changed between tz 2022e and 2022f?"
    # October 2022 has two releases: no month question for it; March 2022 has one
    assert "month/2022e" not in qs and "month/2022f" not in qs
    assert qs["month/2022a"]["question"] == "What did the tz release of March 2022 contain?"
    assert qs["last-month/2022a"]["now"].startswith("2022-04-15")
    assert "current/2022f" not in qs  # the newest release has no successor
    assert qs["month/2022a"]["half"] == "AB"[hashlib.sha256(b"2022a").digest()[0] & 1] == half_of("2022a")
    assert make_questions(convert(NEWS), "tz") == list(qs.values())  # deterministic


def test_timeqa_halves_and_passages_as_documents(tmp_path) -> None:
    from bench.eval.timeqa import build_passages, half_of

    assert half_of("James_Marape") == "AB"[hashlib.sha256(b"James_Marape").digest()[0] & 1]
    corpus = tmp_path / "corpus.jsonl"
    rows = [
        {"doc_id": "timeqa:X#p000", "title": "X", "text": "X. Born 1970.", "page": "X"},
        {"doc_id": "timeqa:X#p001", "title": "X", "text": "X. Mayor since 2001.", "page": "X"},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    index = build_passages(corpus, tmp_path / "out" / "passages.jsonl")
    docs = [json.loads(x) for x in (tmp_path / "out" / "passages.jsonl").read_text().splitlines()]
    assert [(d["doc_id"], d["text"], d["published_at"]) for d in docs] == [
        ("timeqa:X#p000", "X. Born 1970.", None),
        ("timeqa:X#p001", "X. Mayor since 2001.", None),
    ]
    assert index.chunk_passages("timeqa:X#p001", "Mayor since 2001.")[0] == ["timeqa:X#p001"]
