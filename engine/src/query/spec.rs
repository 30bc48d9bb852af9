//! A values query as the engine takes it: validated and resolved by the caller (the station
//! and parameter found in the catalog), not yet planned.

use crate::dataset::layout::{COL_QUALITY, COL_TIMESTAMP, COL_VALUE, values_schema};
use crate::error::Result;
use crate::model::Micros;
use crate::model::duration::IsoDuration;
use crate::model::ids::{ParameterId, StationId};
use std::sync::Arc;

/// A column of the values resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueColumn {
    Timestamp,
    Value,
    Quality,
}

impl ValueColumn {
    pub const ALL: [ValueColumn; 3] = [Self::Timestamp, Self::Value, Self::Quality];
    pub fn name(self) -> &'static str {
        match self {
            Self::Timestamp => COL_TIMESTAMP,
            Self::Value => COL_VALUE,
            Self::Quality => COL_QUALITY,
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// Which part of the series forms the collection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// Inclusive bounds; `None` is open.
    Between {
        from: Option<Micros>,
        to: Option<Micros>,
    },
    /// The newest N values.
    Recent(u64),
    /// The period of this length ending at the newest value (start exclusive, end inclusive).
    Last(IsoDuration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: ValueColumn,
    pub descending: bool,
}

#[derive(Debug, Clone)]
pub struct ValuesQuery {
    pub station: StationId,
    pub parameter: ParameterId,
    pub window: Window,
    /// Empty means timestamp ascending.
    pub sort: Vec<SortKey>,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Output columns in this order.
    pub columns: Vec<ValueColumn>,
    /// Whether the caller needs the size of the collection (pagination).
    pub need_total: bool,
    /// Only values of these qualities (`None`: all).
    pub qualities: Option<Arc<[String]>>,
}

impl ValuesQuery {
    /// Every row of one series in `window`, all columns, in time order: no page, no total.
    pub fn of_series(station: StationId, parameter: ParameterId, window: Window) -> Self {
        Self {
            station,
            parameter,
            window,
            sort: Vec::new(),
            offset: 0,
            limit: None,
            columns: ValueColumn::ALL.to_vec(),
            need_total: false,
            qualities: None,
        }
    }
}

/// How an answer's months are read ahead of the one being sent, chosen by what its batches go
/// to. Stored months (Parquet answers) are always read in groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAhead {
    /// A task a month. For encoders that hand each batch to tasks of their own (text): their
    /// work then interleaves with decoding in fine steps. Grouped, a made 10-year CSV or JSON
    /// download took 5-11 % more time.
    Monthly,
    /// A task for a group of months (of about 12 K rows, see `plan::GROUP_ROWS`). For encoders that use each batch on
    /// the answer's task at little cost (Arrow IPC), where decoding is the work and a task's
    /// two thread wake-ups its overhead: a made 10-year Arrow download took 1-3 % less time
    /// and CPU (`benches/ab.py`, both orders).
    Grouped,
}

/// Positions of the columns in the value files' schema.
pub(crate) fn column_indices(columns: &[ValueColumn]) -> Result<Vec<usize>> {
    let schema = values_schema();
    Ok(columns
        .iter()
        .map(|c| schema.index_of(c.name()))
        .collect::<Result<Vec<_>, _>>()?)
}
