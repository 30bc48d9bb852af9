//! Appending to a published dataset: a station-month that already has a value file is read
//! back and merged with the new rows, a new row replacing a stored one at the same timestamp
//! (a correction).

use crate::model::ids::ParameterId;
use crate::write::writer::SeriesChunk;
use std::collections::BTreeMap;

/// Stored and new rows of one station-month, each chunk ascending in time, merged per
/// parameter; at a timestamp both have, the new row wins. Returns the chunks and how many
/// stored rows were replaced.
pub(super) fn merge_chunks(
    stored: Vec<SeriesChunk>,
    new: Vec<SeriesChunk>,
) -> (Vec<SeriesChunk>, u64) {
    let mut by_parameter: BTreeMap<ParameterId, (Option<SeriesChunk>, Option<SeriesChunk>)> =
        BTreeMap::new();
    for c in stored {
        let parameter = c.parameter.clone();
        by_parameter.entry(parameter).or_default().0 = Some(c);
    }
    for c in new {
        let parameter = c.parameter.clone();
        by_parameter.entry(parameter).or_default().1 = Some(c);
    }
    let mut replaced = 0;
    let merged = by_parameter
        .into_iter()
        .map(|(parameter, pair)| match pair {
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => SeriesChunk {
                parameter,
                timestamps: Vec::new(),
                values: Vec::new(),
                quality: Vec::new(),
            },
            (Some(old), Some(new)) => {
                let mut out = SeriesChunk {
                    parameter,
                    timestamps: Vec::with_capacity(old.timestamps.len() + new.timestamps.len()),
                    values: Vec::new(),
                    quality: Vec::new(),
                };
                let (mut i, mut j) = (0, 0);
                while i < old.timestamps.len() || j < new.timestamps.len() {
                    let take_new = match (old.timestamps.get(i), new.timestamps.get(j)) {
                        (Some(a), Some(b)) if a == b => {
                            replaced += 1;
                            i += 1;
                            true
                        }
                        (Some(a), Some(b)) => b < a,
                        (None, _) => true,
                        (Some(_), None) => false,
                    };
                    let (from, k) = if take_new {
                        (&new, &mut j)
                    } else {
                        (&old, &mut i)
                    };
                    out.timestamps.push(from.timestamps[*k]);
                    out.values.push(from.values[*k]);
                    out.quality.push(from.quality[*k]);
                    *k += 1;
                }
                out
            }
        })
        .collect();
    (merged, replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(rows: &[(i64, f64)]) -> SeriesChunk {
        SeriesChunk {
            parameter: "w".parse().unwrap(),
            timestamps: rows.iter().map(|r| r.0).collect(),
            values: rows.iter().map(|r| r.1).collect(),
            quality: vec!["good"; rows.len()],
        }
    }

    #[test]
    fn new_rows_interleave_and_replace_stored_ones() {
        let (merged, replaced) = merge_chunks(
            vec![chunk(&[(1, 1.0), (3, 3.0), (5, 5.0)])],
            vec![chunk(&[(0, 0.5), (3, 30.0), (6, 6.0)])],
        );
        assert_eq!(replaced, 1);
        assert_eq!(merged[0].timestamps, vec![0, 1, 3, 5, 6]);
        assert_eq!(merged[0].values, vec![0.5, 1.0, 30.0, 5.0, 6.0]);
    }
}
