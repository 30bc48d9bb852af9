//! One series' values in one month: what a writer writes a station-month from and what a
//! stored one reads back as.

use crate::model::Micros;
use crate::model::ids::ParameterId;

/// One parameter's values in one month, ascending by timestamp.
#[derive(Debug, Clone)]
pub(crate) struct SeriesChunk {
    pub parameter: ParameterId,
    pub timestamps: Vec<Micros>,
    pub values: Vec<f64>,
    pub quality: Vec<&'static str>,
}
