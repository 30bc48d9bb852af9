// The station map of the HTML station list: the stations of the page (embedded as JSON by the
// server) as circle markers, each linking its station's page. A base layer only when the
// server names a tile server (setting map_tile_url); otherwise the page makes no requests
// beyond this server.
(function () {
  var element = document.getElementById("map");
  var data = document.getElementById("map-stations");
  if (!element || !data || typeof L === "undefined") return;
  var stations = JSON.parse(data.textContent);
  var map = L.map(element, { attributionControl: true });
  var tiles = element.getAttribute("data-tiles");
  if (tiles) {
    L.tileLayer(tiles, { maxZoom: 18, attribution: element.getAttribute("data-attribution") || "" }).addTo(map);
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
