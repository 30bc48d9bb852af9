// The station map of the HTML station list: the stations of the page (embedded as JSON by the
// server) as circle markers, each linking its station's page, the view fitted to them. A base
// layer of tiles when the server names a tile server (setting map_tile_url); otherwise the
// outline of the country and its neighbours from this server, and no request goes elsewhere.
(function () {
  var element = document.getElementById("map");
  var data = document.getElementById("map-stations");
  if (!element || !data || typeof L === "undefined") return;
  var stations = JSON.parse(data.textContent);
  // Quarter zoom steps, so that the view fits the stations closely.
  var map = L.map(element, { attributionControl: true, zoomSnap: 0.25 });
  var tiles = element.getAttribute("data-tiles");
  var outline = element.getAttribute("data-outline");
  if (tiles) {
    L.tileLayer(tiles, { maxZoom: 18, attribution: element.getAttribute("data-attribution") || "" }).addTo(map);
  } else if (outline) {
    // Without tiles, the outline of Germany (stronger) and its neighbours (Natural Earth,
    // public domain), served by this server, drawn under the stations.
    fetch(outline).then(function (r) { return r.ok ? r.json() : null; }).then(function (shapes) {
      if (!shapes) return;
      L.geoJSON(shapes, {
        interactive: false,
        style: function (f) {
          var home = f.properties && f.properties.home;
          return { color: home ? "#555" : "#aaa", weight: home ? 1.5 : 1, fillColor: home ? "#f2f0e6" : "#fafafa", fillOpacity: 1 };
        }
      }).addTo(map).bringToBack();
      element.setAttribute("data-outline-drawn", "true");
    });
  }
  var points = [];
  stations.forEach(function (s) {
    var at = [s.lat, s.lon];
    points.push(at);
    var marker = L.circleMarker(at, { radius: 6, color: "#002850", weight: 2, fillColor: "#4a78b0", fillOpacity: 0.8 });
    var link = document.createElement("a");
    link.href = s.href;
    link.textContent = s.name;
    marker.bindPopup(link);
    marker.bindTooltip(s.name);
    marker.addTo(map);
  });
  if (points.length > 0) {
    map.fitBounds(points, { padding: [20, 20], maxZoom: 10 });
  } else {
    map.setView([51, 10], 5);
  }
})();
