//! The endpoints, as their query parameters tell them apart.

/// An endpoint. A POST whose parameters come in its body is an endpoint of its own where it
/// takes other parameters than the GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Landing,
    /// `/v1/openapi.json`.
    Document,
    Stations,
    Station,
    Parameters,
    Parameter,
    Characteristics,
    Characteristic,
    /// One series' values.
    Values,
    /// `/v1/values`.
    ManyValues,
    /// `POST /v1/values`: the selection in the body, no charts.
    PostedValues,
    Latest,
    /// One series' statistics.
    Statistics,
    /// `/v1/statistics`.
    ManyStatistics,
    /// `POST /v1/statistics`: the selection in the body, no charts.
    PostedStatistics,
    Versions,
    Version,
    Sql,
    /// Health and the JSON Schemas: no parameters.
    Fixed,
}
