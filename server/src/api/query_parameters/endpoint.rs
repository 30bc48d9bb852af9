//! The endpoints, as their query parameters tell them apart.

use crate::render::format::Answer;

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

impl Endpoint {
    /// The answer kind whose formats the endpoint offers.
    pub fn answer(self) -> Answer {
        match self {
            Endpoint::Landing | Endpoint::Document => Answer::Landing,
            Endpoint::Stations | Endpoint::Station => Answer::Stations,
            Endpoint::Values => Answer::Values,
            Endpoint::ManyValues => Answer::ManyValues,
            Endpoint::PostedValues => Answer::PostedValues,
            Endpoint::Latest => Answer::Latest,
            Endpoint::Statistics => Answer::Statistics,
            Endpoint::ManyStatistics => Answer::ManyStatistics,
            Endpoint::PostedStatistics => Answer::PostedStatistics,
            Endpoint::Sql => Answer::Sql,
            Endpoint::Parameters
            | Endpoint::Parameter
            | Endpoint::Characteristics
            | Endpoint::Characteristic
            | Endpoint::Versions
            | Endpoint::Version
            | Endpoint::Fixed => Answer::Catalog,
        }
    }
}
