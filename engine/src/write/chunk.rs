//! What a writer writes a station-month from: its series' values.

use crate::model::Micros;
use crate::model::ids::ParameterId;

/// One parameter's values in one month, ascending by timestamp.
#[derive(Debug, Clone)]
pub struct SeriesChunk {
    pub parameter: ParameterId,
    pub timestamps: Vec<Micros>,
    pub values: Vec<f64>,
    pub quality: Vec<&'static str>,
}
