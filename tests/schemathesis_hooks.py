"""Hooks for tests/schemathesis.rs (loaded through SCHEMATHESIS_HOOKS).

Two rules the document cannot say in JSON Schema are kept out of the generated requests, so that
the `positive_data_acceptance` check holds for every other schema-valid request:

- A window whose `from` is after its `to` is a 400 (DESIGN: "from > to -> 400"): one parameter
  must not be greater than another.
- A chart of many series (`/v1/values` or `/v1/statistics` with `format=svg` or `png`) draws at
  most 12 series, and a selection of more is a 400: how many series a selection holds depends
  on the data (and a chart of normals is of one series).
- An aggregate's `interval` may not be finer than the series' own (PT15M in the test data), and
  with `aggregate`, `sort` and `fields` name the aggregate's columns, which depend on the
  statistics asked for.
- `changedSince` names a version no newer than the one answered from, and is not taken with
  the parameters that pick or order other rows: which versions there are depends on the data,
  and what it goes with on the other parameters (tests/versions.rs tries each).
- An `observedProperties` value must be one some parameter has (the test data's `waterLevel`
  in the cases generated as valid): which there are depends on the data, and one no parameter
  has is a 400 listing those there are.
- A `/v1/sql` statement must be SQL over the archive's tables, which no JSON Schema says: in
  the cases generated as valid, the statement is the document's example (with every format
  and version generated around it); the cases generated as invalid keep theirs (tests/sql.rs
  tries statements of every kind, refused ones too).
"""

import datetime

import schemathesis

CHARTS = {"svg", "png", "image/svg+xml", "image/png"}

# The example statement of /v1/sql in the document (schemas/build.py, SQL_STATEMENT).
SQL = ("SELECT station, max(value) AS highest FROM values WHERE parameter = 'water-level-15min' "
       "GROUP BY station ORDER BY highest DESC LIMIT 10")


def _instant(text):
    # An unencoded "+" may arrive as a space, as the server reads it.
    return datetime.datetime.fromisoformat(str(text).replace(" ", "+").replace("Z", "+00:00"))


def _keeps(ctx, params):
    if not params:
        return True
    path = getattr(getattr(ctx, "operation", None), "path", "")
    if path in ("/values", "/statistics") and str(params.get("format", "")).lower() in CHARTS:
        return False
    if "changedSince" in params:
        return False
    if "aggregate" in params:
        interval = str(params.get("interval", ""))
        minutes = interval[2:-1] if interval.startswith("PT") and interval.endswith("M") else ""
        if minutes.isdigit() and int(minutes) < 15:
            return False
        if "sort" in params or "fields" in params:
            return False
    if "from" not in params or "to" not in params:
        return True
    try:
        return _instant(params["from"]) <= _instant(params["to"])
    except (TypeError, ValueError, OverflowError):
        # Not a time at all: the case is about something else; keep it.
        return True


def _flat(params):
    """The parameters of a query or body, the members of exploded object parameters too."""
    out = {}
    for k, v in (params or {}).items():
        if isinstance(v, dict):
            out |= v
        else:
            out[k] = v
    return out


@schemathesis.hook
def filter_case(ctx, case):
    # Every phase (the coverage phase applies no query or body filters): the query, and the
    # body of POST /v1/values, which takes the query's parameters.
    params = _flat(case.query if isinstance(case.query, dict) else {})
    if isinstance(case.body, dict):
        params |= _flat(case.body)
    return _keeps(ctx, params)


def _valid(case):
    meta = getattr(case, "meta", None)
    mode = getattr(getattr(meta, "generation", None), "mode", None)
    return getattr(mode, "value", mode) == "positive"


# An observed property the test data has: one no parameter has is a 400 that lists them.
PROPERTY = "waterLevel"


def _known_properties(params):
    if isinstance(params, dict) and "observedProperties" in params:
        given = params["observedProperties"]
        params["observedProperties"] = [PROPERTY] if isinstance(given, list) else PROPERTY


@schemathesis.hook
def map_case(ctx, case):
    path = getattr(getattr(ctx, "operation", None), "path", "")
    if not _valid(case):
        return case
    _known_properties(case.query)
    _known_properties(case.body)
    if path != "/sql":
        return case
    if isinstance(case.body, str):
        case.body = SQL
    elif isinstance(case.body, dict) and "q" in case.body:
        case.body["q"] = SQL
    if isinstance(case.query, dict) and "q" in case.query:
        case.query["q"] = SQL
    return case
