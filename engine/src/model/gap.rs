//! Recorded gaps: a row of quality `missing` has a time and no value. Archives mark them (an
//! empty cell, a Parquet null) and a user needs them: "not measured" is not "not published".
//!
//! Where a gap is stored, read or answered it is a null: the month file's `value` column is
//! nullable in months that hold one (`layout::values_schema_with_gaps`), and in a version with
//! gaps every answer's `value` is nullable (`Dataset::has_gaps`), whatever its window, so a
//! client sees one schema. What is written holds values as `f64` rows ([`SeriesChunk`]: the
//! import, the generator, a stored month read back for an append, rollups or a compaction);
//! there a gap is NaN ([`GAP`]): the import refuses non-finite numbers, so NaN means nothing
//! else, and the rows keep one plain type. What computes with values skips both ([`is_gap`],
//! nulls): aggregates, statistics, rollups, the newest value.
//!
//! [`SeriesChunk`]: crate::model::chunk::SeriesChunk

use datafusion::arrow::array::{Array, ArrayRef, Float64Array};
use datafusion::arrow::buffer::NullBuffer;
use std::sync::Arc;

/// The value of a recorded gap inside the engine.
pub(crate) const GAP: f64 = f64::NAN;

/// Whether `v` is a recorded gap.
pub(crate) fn is_gap(v: f64) -> bool {
    v.is_nan()
}

/// A value column as read from a file: its nulls (recorded gaps) as NaN, without a null
/// buffer. An array without nulls is returned as it is.
pub(crate) fn nulls_to_gaps(values: &Float64Array) -> Option<Float64Array> {
    let nulls = values.nulls().filter(|n| n.null_count() > 0)?;
    let filled: Float64Array = values
        .values()
        .iter()
        .enumerate()
        .map(|(i, &v)| if nulls.is_null(i) { GAP } else { v })
        .collect::<Vec<f64>>()
        .into();
    Some(filled)
}

/// A value column as it leaves the engine: NaN (recorded gaps) as nulls. `None` when there is
/// none, so an answer without gaps is the array as it was.
pub(crate) fn gaps_to_nulls(values: &Float64Array) -> Option<ArrayRef> {
    if !values.values().iter().any(|v| v.is_nan()) {
        return None;
    }
    let valid = NullBuffer::from_iter(values.values().iter().map(|v| !v.is_nan()));
    let array = Float64Array::new(values.values().clone(), Some(valid));
    Some(Arc::new(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_and_gaps_turn_into_each_other() {
        let read = Float64Array::from(vec![Some(1.5), None, Some(-2.0)]);
        let inside = nulls_to_gaps(&read).expect("a null");
        assert!(inside.nulls().is_none());
        assert!(is_gap(inside.value(1)) && inside.value(0) == 1.5);
        let out = gaps_to_nulls(&inside).expect("a gap");
        let out = out.as_any().downcast_ref::<Float64Array>().unwrap();
        assert_eq!(out.null_count(), 1);
        assert!(out.is_null(1) && out.value(2) == -2.0);
        let plain = Float64Array::from(vec![1.0, 2.0]);
        assert!(nulls_to_gaps(&plain).is_none() && gaps_to_nulls(&plain).is_none());
    }
}
