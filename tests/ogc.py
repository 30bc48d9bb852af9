#!/usr/bin/env python3
"""OGC API – Features under /ogc, read by the clients GIS users have (run by tests/ogc.rs).

usage: ogc.py V1_BASE_URL

- OWSLib's `Features` client: landing page, conformance, the API definition (valid OpenAPI
  3.0), collections,
  items with limit and paging, one feature;
- GDAL's OAPIF driver (through pyogrio): the layers it finds, every station read as a layer;
- the answers against `/v1`: every station, series and newest value, with its coordinates;
  `bbox`, `datetime` and property filters against the same selection made by hand;
- coordinate systems (Part 2): features and `bbox` in EPSG:4326 (latitude first) and
  ETRS89 / UTM 32N and 33N, against pyproj (PROJ);
- pages for people (`f=html`, a browser's `Accept`);
- bad requests: 400 problems naming the parameter, 404 for what does not exist.
"""
import datetime as dt
import json
import struct
import sys
import urllib.error
import urllib.parse
import urllib.request

import pyogrio
import pyproj
import pyogrio.raw
from openapi_spec_validator import validate
from owslib.ogcapi.features import Features

V1 = sys.argv[1].rstrip("/")
OGC = V1[: -len("/v1")] + "/ogc"


def get(url):
    with urllib.request.urlopen(url) as r:
        return json.loads(r.read()), r.headers


def problem(url):
    try:
        urllib.request.urlopen(url)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())
    raise AssertionError(f"{url} answered 2xx")


def v1_stations():
    return get(V1 + "/stations?limit=10000&include=parameters")[0]["data"]


def all_items(collection, query=""):
    """Every feature of a collection, following `next` links a page of 7 at a time."""
    url = f"{OGC}/collections/{collection}/items?limit=7{query}"
    features, pages, matched = [], 0, None
    while url:
        page, headers = get(url)
        assert headers["Content-Type"].startswith("application/geo+json"), headers["Content-Type"]
        assert page["type"] == "FeatureCollection"
        assert page["numberReturned"] == len(page["features"]) <= 7
        matched = page["numberMatched"] if matched is None else matched
        assert page["numberMatched"] == matched, "numberMatched holds on every page"
        rels = {l["rel"]: l["href"] for l in page["links"]}
        assert ("prev" in rels) == (pages > 0), "prev on every page but the first"
        features += page["features"]
        pages += 1
        url = rels.get("next")
    assert len(features) == matched, (len(features), matched)
    return features


def check_landing_and_owslib():
    landing, _ = get(OGC)
    rels = {l["rel"]: l["href"] for l in landing["links"]}
    for rel in ("self", "service-desc", "service-doc", "conformance", "data"):
        assert rel in rels, rel
    w = Features(OGC)
    classes = w.conformance()["conformsTo"]
    for c in ("core", "geojson", "oas30"):
        assert f"http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/{c}" in classes, c
    assert "http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs" in classes
    api = w.api()
    assert api["openapi"].startswith("3.0"), api.get("openapi")
    assert "/collections/stations/items" in api["paths"]
    validate(api)  # a valid OpenAPI 3.0 document
    names = [c["id"] for c in w.collections()["collections"]]
    assert names == ["stations", "series", "latest"], names
    stations = w.collection("stations")
    assert stations["numberOfFeatures"] == len(v1_stations())
    assert stations["extent"]["spatial"]["bbox"][0][0] <= stations["extent"]["spatial"]["bbox"][0][2]
    page = w.collection_items("stations", limit=5)
    assert len(page["features"]) == 5 and page["numberMatched"] == len(v1_stations())
    first = page["features"][0]
    one = w.collection_item("stations", first["id"])
    assert one["id"] == first["id"] and one["geometry"] == first["geometry"]
    print(f"owslib: conformance, api, {len(names)} collections, items, item")


def check_against_v1():
    want = {s["id"]: s for s in v1_stations()}
    got = all_items("stations")
    assert sorted(f["id"] for f in got) == sorted(want), "every station, once"
    for f in got:
        s = want[f["id"]]
        assert f["geometry"] == {"type": "Point", "coordinates": [s["coordinates"]["lon"], s["coordinates"]["lat"]]}
        assert f["properties"]["name"] == s["name"] and f["properties"]["type"] == s["type"]
    series = all_items("series")
    want_series = {f"{s['id']}~{p['id']}": (s, p) for s in want.values() for p in s["parameters"]}
    assert sorted(f["id"] for f in series) == sorted(want_series), "every series, once"
    for f in series:
        s, p = want_series[f["id"]]
        assert f["properties"]["unit"] == p["unit"] and f["properties"]["observedProperty"] == p["observedProperty"]
        assert f["properties"]["periodStart"] is not None
    latest = all_items("latest")
    properties = sorted({p["observedProperty"] for s in want.values() for p in s["parameters"]})
    v1_latest = get(V1 + "/latest?limit=10000&observedProperties=" + ",".join(properties))[0]["data"]
    want_latest = {f"{r['stationId']}~{r['parameterId']}": r for r in v1_latest}
    assert sorted(f["id"] for f in latest) == sorted(want_latest), "a newest value per series"
    for f in latest:
        r = want_latest[f["id"]]
        assert f["properties"]["value"] == r["value"] and f["properties"]["quality"] == r["quality"]
    one, _ = get(f"{OGC}/collections/latest/items/{latest[0]['id']}")
    assert one["properties"]["value"] == latest[0]["properties"]["value"]

    # Filters, against the same selection made here.
    lons = sorted(s["coordinates"]["lon"] for s in want.values())
    lats = sorted(s["coordinates"]["lat"] for s in want.values())
    box = (lons[2], lats[2], lons[-3], lats[-3])
    inside = {i for i, s in want.items()
              if box[0] <= s["coordinates"]["lon"] <= box[2] and box[1] <= s["coordinates"]["lat"] <= box[3]}
    bbox = ",".join(str(x) for x in box)
    got = {f["id"] for f in all_items("stations", f"&bbox={bbox}")}
    assert got == inside and 0 < len(got) < len(want), (len(got), len(inside))
    kind = next(iter(want.values()))["type"]
    got = {f["id"] for f in all_items("stations", f"&type={kind}")}
    assert got == {i for i, s in want.items() if s["type"] == kind}
    one = next(iter(want.values()))
    named = all_items("stations", "&name=" + urllib.parse.quote(one["name"]) + f"&type={kind}")
    assert [f["id"] for f in named] == [i for i, s in want.items() if s["name"] == one["name"] and s["type"] == kind]
    assert not all_items("stations", "&type=" + ("groundwater" if kind != "groundwater" else "weather"))
    # datetime: the series whose period with data reaches into the median series' last day.
    ends = sorted(f["properties"]["periodEnd"] for f in series)
    day = ends[len(ends) // 2][:10]
    hits = {f["id"] for f in all_items("series", f"&datetime={day}T00:00:00Z/..")}
    want_hits = {f["id"] for f in series if f["properties"]["periodEnd"] >= f"{day}T00:00:00"}
    assert hits == want_hits and hits, (len(hits), len(want_hits))
    assert not all_items("series", "&datetime=2999-01-01T00:00:00Z"), "nothing has data then"
    last = max(dt.datetime.fromisoformat(f["properties"]["periodEnd"].replace("Z", "+00:00")) for f in series)
    at_end = {f["id"] for f in all_items("series", "&datetime=" + urllib.parse.quote(last.isoformat()))}
    assert at_end == {f["id"] for f in series if dt.datetime.fromisoformat(
        f["properties"]["periodEnd"].replace("Z", "+00:00")) == last} and at_end
    after = (last + dt.timedelta(seconds=1)).isoformat()
    assert not all_items("series", "&datetime=" + urllib.parse.quote(after) + "/.."), "none after the last end"
    assert len(all_items("series", "&datetime=1900-01-01/2999-12-31")) == len(series)
    print(f"against /v1: {len(got)} stations by type, {len(inside)} in a bbox, "
          f"{len(series)} series, {len(latest)} newest values, datetime {len(hits)}")


def check_gdal():
    layers = [name for name, _ in pyogrio.list_layers("OAPIF:" + OGC)]
    assert {"stations", "series", "latest"} <= set(layers), layers
    meta, _, geometry, fields = pyogrio.raw.read("OAPIF:" + OGC, layer="stations")
    want = {s["id"]: s for s in v1_stations()}
    ids = list(fields[list(meta["fields"]).index("id")])
    assert sorted(ids) == sorted(want), (len(ids), len(want))
    for sid, wkb in zip(ids, geometry):
        order = "<" if wkb[0] == 1 else ">"
        kind, x, y = struct.unpack(order + "Idd", wkb[1:21])
        assert kind == 1, kind  # a point
        s = want[sid]
        assert abs(x - s["coordinates"]["lon"]) < 1e-9 and abs(y - s["coordinates"]["lat"]) < 1e-9
    print(f"gdal: layers {sorted(layers)}, {len(ids)} stations")


def check_bad_requests():
    items = OGC + "/collections/stations/items"
    for query, name in [("limit=0", "limit"), ("limit=abc", "limit"), ("offset=-1", "offset"),
                        ("bbox=1,2,3", "bbox"), ("bbox=0,95,1,96", "bbox"), ("bbox=a,b,c,d", "bbox"),
                        ("datetime=yesterday", "datetime"), ("datetime=2024-02-01/2024-01-01", "datetime"),
                        ("colour=blue", "colour"), ("f=xml", "f")]:
        code, body = problem(f"{items}?{query}")
        assert code == 400, (query, code)
        assert name in json.dumps(body), (query, body)
    for path in ("/collections/rivers", "/collections/stations/items/nowhere",
                 "/collections/series/items/nowhere~W", "/nothing"):
        code, _ = problem(OGC + path)
        assert code == 404, (path, code)
    page, headers = get(items + "?limit=20000")
    assert page["limitApplied"] == 10000 and "10000" in headers["hydro-limit"]
    print("bad requests: 400 naming the parameter, 404, a clamped limit said")


EPSG = "http://www.opengis.net/def/crs/EPSG/0/"


def check_crs():
    want = {s["id"]: s for s in v1_stations()}
    collection, _ = get(OGC + "/collections/stations")
    assert collection["crs"] == ["http://www.opengis.net/def/crs/OGC/1.3/CRS84", EPSG + "4326",
                                 EPSG + "25832", EPSG + "25833"], collection["crs"]
    q = urllib.parse.quote
    page, headers = get(f"{OGC}/collections/stations/items?limit=100&crs={q(EPSG + '4326')}")
    assert headers["Content-Crs"] == f"<{EPSG}4326>", headers["Content-Crs"]
    for f in page["features"]:
        s = want[f["id"]]
        assert f["geometry"]["coordinates"] == [s["coordinates"]["lat"], s["coordinates"]["lon"]], "latitude first"
    for code in (25832, 25833):
        to_utm = pyproj.Transformer.from_crs("EPSG:4326", f"EPSG:{code}", always_xy=True)
        page, headers = get(f"{OGC}/collections/stations/items?limit=100&crs={q(EPSG + str(code))}")
        assert headers["Content-Crs"] == f"<{EPSG}{code}>"
        utm = {}
        for f in page["features"]:
            s = want[f["id"]]
            e, n = to_utm.transform(s["coordinates"]["lon"], s["coordinates"]["lat"])
            x, y = f["geometry"]["coordinates"]
            assert abs(x - e) < 0.01 and abs(y - n) < 0.01, (code, f["id"], x, y, e, n)
            utm[f["id"]] = (e, n)
        one, headers = get(f"{OGC}/collections/stations/items/{page['features'][0]['id']}?crs={q(EPSG + str(code))}")
        assert one["geometry"] == page["features"][0]["geometry"] and str(code) in headers["Content-Crs"]
        # A box in the grid around the middle of the stations' eastings and northings, its
        # edges half way between two stations (PROJ and the server may differ by millimetres).
        es, ns = sorted(e for e, _ in utm.values()), sorted(n for _, n in utm.values())
        mid = lambda v, i: (v[i] + v[i + 1]) / 2
        box = (mid(es, 2), mid(ns, 2), mid(es, -4), mid(ns, -4))
        inside = {i for i, (e, n) in utm.items() if box[0] <= e <= box[2] and box[1] <= n <= box[3]}
        got = {f["id"] for f in all_items("stations", "&bbox=" + ",".join(map(str, box))
                                          + "&bbox-crs=" + q(EPSG + str(code)))}
        assert got == inside and 0 < len(got) < len(want), (code, len(got), len(inside))
    # The same box in CRS84 and, latitude first, in EPSG:4326.
    lons = sorted(s["coordinates"]["lon"] for s in want.values())
    lats = sorted(s["coordinates"]["lat"] for s in want.values())
    box84 = f"{lons[2]},{lats[2]},{lons[-3]},{lats[-3]}"
    box4326 = f"{lats[2]},{lons[2]},{lats[-3]},{lons[-3]}"
    a = {f["id"] for f in all_items("stations", "&bbox=" + box84)}
    b = {f["id"] for f in all_items("stations", f"&bbox={box4326}&bbox-crs={q(EPSG + '4326')}")}
    assert a == b and a, (len(a), len(b))
    for query, name in [(f"crs={q(EPSG + '3857')}", "crs"), ("crs=EPSG:25832", "crs"),
                        (f"bbox=1,2,3,4&bbox-crs={q(EPSG + '31467')}", "bbox-crs"),
                        (f"bbox=400000,5600000,300000,5700000&bbox-crs={q(EPSG + '25832')}", "bbox")]:
        code, body = problem(f"{OGC}/collections/stations/items?{query}")
        assert code == 400 and name in json.dumps(body), (query, code, body)
    print("crs: EPSG:4326 latitude first, UTM 32N and 33N as PROJ has them, bbox-crs")


def page(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req) as r:
        assert r.headers["Content-Type"].startswith("text/html"), (url, r.headers["Content-Type"])
        return r.read().decode()


def check_html():
    landing = page(OGC + "?f=html")
    assert "service-desc" in landing and "/ogc/collections?f=html" in landing, landing[:400]
    browser = page(OGC, "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
    assert browser == landing, "a browser's Accept gets the page"
    collections = page(OGC + "/collections?f=html")
    for name in ("Stations", "Series", "Latest values"):
        assert name in collections, name
    first, _ = get(OGC + "/collections/stations/items?limit=5")
    items = page(OGC + "/collections/stations/items?limit=5&f=html")
    for f in first["features"]:
        assert f">{f['id']}</a>" in items, f["id"]
    assert 'rel="next"' in items and "offset=5" in items and "f=html" in items
    one = page(f"{OGC}/collections/series/items/{urllib.parse.quote(all_items('series')[0]['id'])}?f=html")
    assert "observedProperty" in one and "periodStart" in one
    assert "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html" in get(OGC + "/conformance")[0]["conformsTo"]
    print("html: landing, collections, a page of features with its pager, a feature")


check_landing_and_owslib()
check_against_v1()
check_gdal()
check_crs()
check_html()
check_bad_requests()
