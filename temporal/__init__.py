"""The temporal language shared by ingest (stage-2 tagger) and retrieval (question parser).

Recognising time expressions in text and resolving them against a reference time (a document's
publication time or a question's clock): absolute and relative dates, ranges, fiscal calendars,
early/mid/late, halves, decades. Imports nothing from :mod:`diachron.ingest` or :mod:`diachron.retrieval`.
"""
