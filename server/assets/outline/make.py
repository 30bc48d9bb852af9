"""Makes outline.geojson: Germany and its neighbours from Natural Earth's 1:50m countries, as
the npm package world-atlas 2.0.2 ships them (TopoJSON), decoded to GeoJSON, parts outside
the map's area left out, coordinates rounded to 0.001 degrees (about 100 m).

    npm pack world-atlas@2.0.2 && tar xzf world-atlas-2.0.2.tgz
    python3 make.py package/countries-50m.json > outline.geojson
"""

import json
import sys

# Germany first (drawn stronger), then its neighbours (for bearings).
COUNTRIES = ["276", "528", "056", "442", "250", "756", "040", "203", "616", "208"]
# The area a German station map shows: parts of neighbours beyond it are left out.
WEST, SOUTH, EAST, NORTH = -2.0, 44.0, 22.0, 58.0


def arcs_of(topology):
    """Each arc as absolute lon/lat points (the quantized deltas decoded)."""
    (sx, sy), (tx, ty) = topology["transform"]["scale"], topology["transform"]["translate"]
    out = []
    for arc in topology["arcs"]:
        x = y = 0
        points = []
        for dx, dy in arc:
            x, y = x + dx, y + dy
            points.append((round(x * sx + tx, 3), round(y * sy + ty, 3)))
        out.append(points)
    return out


def ring(arcs, indexes):
    points = []
    for i in indexes:
        arc = arcs[i] if i >= 0 else list(reversed(arcs[~i]))
        points.extend(arc if not points else arc[1:])
    return [list(p) for p in points]


def inside(polygon):
    lons = [p[0] for p in polygon[0]]
    lats = [p[1] for p in polygon[0]]
    return max(lons) > WEST and min(lons) < EAST and max(lats) > SOUTH and min(lats) < NORTH


def main(path):
    topology = json.load(open(path))
    arcs = arcs_of(topology)
    features = []
    for g in topology["objects"]["countries"]["geometries"]:
        if g.get("id") not in COUNTRIES:
            continue
        polygons = g["arcs"] if g["type"] == "MultiPolygon" else [g["arcs"]]
        shapes = [[ring(arcs, r) for r in polygon] for polygon in polygons]
        shapes = [s for s in shapes if inside(s)]
        features.append({
            "type": "Feature",
            "properties": {"name": g["properties"]["name"], "home": g["id"] == "276"},
            "geometry": {"type": "MultiPolygon", "coordinates": shapes},
        })
    features.sort(key=lambda f: not f["properties"]["home"])
    json.dump({"type": "FeatureCollection", "features": features}, sys.stdout, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv[1])
