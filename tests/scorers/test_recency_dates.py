"""Numeric dates are read for what they can only be: 20230101 was read as epoch seconds (a
moment of August 1970, recency 2e-17) and epoch milliseconds as a future date (recency 1.0),
both without a word. A YYYYMMDD number is that date, a number from 1e11 epoch milliseconds;
a number that is neither (20231345, microseconds) is an error naming the document, the
field and the value."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from rerankit import Document
from rerankit.errors import InvalidDocumentError
from rerankit.scorers import RecencyScorer

NOW = "2025-12-31"


def _recency(*values):
    scorer = RecencyScorer("published", half_life_days=365, now=NOW)
    docs = [Document("x", metadata={"published": v}) for v in values]
    return asyncio.run(scorer.score("q", docs)).values.tolist()


def test_a_yyyymmdd_number_and_epoch_milliseconds_read_as_the_same_day_as_its_iso_string():
    day = dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)
    seconds = int(day.timestamp())
    got = _recency("2023-01-01", 20230101, seconds, seconds * 1000, float(seconds * 1000))
    assert got == pytest.approx([got[0]] * 5) and 0.1 < got[0] < 0.2


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (20231345, "read as a date written YYYYMMDD, and this is none"),
        (19000230, "read as a date written YYYYMMDD, and this is none"),
        (1_700_000_000_000_000, "too large for epoch milliseconds (microseconds?"),
        (float("nan"), "nan"),
    ],
)
def test_a_number_that_is_no_date_is_an_error_naming_the_document_field_and_value(value, said):
    with pytest.raises(InvalidDocumentError) as err:
        _recency("2023-01-01", value)
    assert err.value.index == 1 and err.value.field == "published"
    message = str(err.value)
    assert message.startswith("document 1: field 'published' is not a time (") and said in message
    assert repr(value) in message and "YYYYMMDD number" in message


def test_now_reads_the_same_numbers():
    assert RecencyScorer(now=20251231).now == 20251231
    with pytest.raises(ValueError, match="now must be a datetime, an ISO-8601 string"):
        RecencyScorer(now=20251232)
