//! The OpenAPI document and JSON Schemas in `schemas/`, compiled in. The schemas are served as
//! they are; the document is served with each operation's query parameters filled in
//! (`api::query_parameters::openapi`).

pub const OPENAPI: &str = include_str!("../../../schemas/openapi.json");

/// `/v1/schemas/{name}`: the JSON Schema of a resource or envelope.
pub fn schema(name: &str) -> Option<&'static str> {
    Some(match name {
        "landing.json" => include_str!("../../../schemas/landing.json"),
        "stations.json" => include_str!("../../../schemas/stations.json"),
        "station.json" => include_str!("../../../schemas/station.json"),
        "parameters.json" => include_str!("../../../schemas/parameters.json"),
        "parameter.json" => include_str!("../../../schemas/parameter.json"),
        "values.json" => include_str!("../../../schemas/values.json"),
        "seriesValues.json" => include_str!("../../../schemas/seriesValues.json"),
        "aggregates.json" => include_str!("../../../schemas/aggregates.json"),
        "seriesAggregates.json" => include_str!("../../../schemas/seriesAggregates.json"),
        "statistics.json" => include_str!("../../../schemas/statistics.json"),
        "seriesStatistics.json" => include_str!("../../../schemas/seriesStatistics.json"),
        "latest.json" => include_str!("../../../schemas/latest.json"),
        "characteristics.json" => include_str!("../../../schemas/characteristics.json"),
        "characteristic.json" => include_str!("../../../schemas/characteristic.json"),
        "versions.json" => include_str!("../../../schemas/versions.json"),
        "version.json" => include_str!("../../../schemas/version.json"),
        "sql.json" => include_str!("../../../schemas/sql.json"),
        "health.json" => include_str!("../../../schemas/health.json"),
        "problem.json" => include_str!("../../../schemas/problem.json"),
        _ => return None,
    })
}
