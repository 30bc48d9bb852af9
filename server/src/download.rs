//! The body of a values answer: the engine's pieces through an encoder, one frame per piece.
//!
//! Text formats encode batches on worker tasks, several at once, and send them in order: a
//! 10-year CSV download is bound by formatting numbers and timestamps, and this puts both cores
//! on it. Arrow IPC and Parquet writers carry state from batch to batch (dictionaries, the
//! footer) and run in order on the body's task.
//!
//! The permit and the query live as long as the body; a client that goes away drops both.

use crate::app::AppState;
use crate::body::{Body, BoxError, stream};
use crate::encode::BatchEncoder;
use crate::encode::text::ValuesText;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use hydro_engine::EngineError;
use hydro_engine::stored::Piece;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::OwnedSemaphorePermit;

pub type Pieces = BoxStream<'static, Result<Piece, EngineError>>;

/// Batches encoded at once ahead of the one being sent: both cores, bounded memory.
const PARALLEL_BATCHES: usize = 4;

/// Batches up to this many rows are encoded on the body's own task: that takes microseconds,
/// less than waking another core for a task (small answers such as `recent=1` waited for
/// that twice).
const INLINE_ROWS: usize = 512;

/// Reads the first piece before the status line is sent, so that a broken first file is still
/// a problem response rather than a cut connection.
pub async fn first_checked(mut pieces: Pieces) -> Result<Pieces, EngineError> {
    match pieces.next().await {
        Some(Err(e)) => Err(e),
        Some(Ok(first)) => Ok(futures::stream::once(async { Ok(first) })
            .chain(pieces)
            .boxed()),
        None => Ok(pieces),
    }
}

/// What the body holds on to: the server state (metrics, faults) and the download slot.
pub struct Held {
    pub state: Arc<AppState>,
    pub permit: OwnedSemaphorePermit,
}

impl Held {
    fn count(&self, rows: usize) {
        self.state
            .metrics
            .rows_streamed
            .fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// A read failed after the status line went out: the only honest signal left is to cut
    /// the body.
    fn cut(&self, e: &dyn std::fmt::Display) -> BoxError {
        self.state.record_fault(&e.to_string());
        "query failed while streaming".into()
    }
}

/// Rows as text, batches encoded in parallel and sent in order.
pub fn text(pieces: Pieces, encoder: ValuesText, held: Held) -> Body {
    let encoder = Arc::new(encoder);
    let head = encoder.head();
    let tail = encoder.tail();
    let mut separator_pending = encoder.leading_separator();
    let held = Arc::new(held);
    let counter = Arc::clone(&held);
    let rows = pieces
        .map(move |piece| {
            let encoder = Arc::clone(&encoder);
            let held = Arc::clone(&counter);
            async move {
                let batch = match piece {
                    Ok(Piece::Rows(b)) => b,
                    Ok(Piece::Stored(_)) => return Err(held.cut(&"stored row group in text")),
                    Err(e) => return Err(held.cut(&e)),
                };
                held.count(batch.num_rows());
                let encoded = if batch.num_rows() <= INLINE_ROWS {
                    encoder.rows(&batch)
                } else {
                    tokio::spawn(async move { encoder.rows(&batch) })
                        .await
                        .map_err(|e| held.cut(&e))?
                };
                encoded.map_err(|e| held.cut(&e))
            }
        })
        .buffered(PARALLEL_BATCHES)
        .map_ok(|chunks| futures::stream::iter(chunks.into_iter().map(Ok)))
        .try_flatten()
        .map_ok(move |mut bytes: Bytes| {
            if separator_pending && !bytes.is_empty() {
                separator_pending = false;
                bytes = bytes.slice(1..);
            }
            bytes
        });
    let frames = futures::stream::once(async move { Ok::<_, BoxError>(head) })
        .chain(rows)
        .chain(futures::stream::once(async move {
            // Keeps the slot until the last byte is produced.
            drop(held);
            Ok(tail)
        }));
    stream(frames.try_filter(|b| futures::future::ready(!b.is_empty())))
}

/// Pieces through a stateful encoder (Arrow IPC, Parquet), in order.
pub fn sequential(pieces: Pieces, encoder: Box<dyn BatchEncoder>, held: Held) -> Body {
    enum Stage {
        Begin,
        Rows,
        Done,
    }
    let init = (pieces, encoder, Stage::Begin, held);
    let frames = futures::stream::unfold(init, |(mut pieces, mut enc, stage, held)| async move {
        let to_box = |e: String| -> BoxError { e.into() };
        let (frame, next) = match stage {
            Stage::Begin => (enc.begin().map_err(to_box), Stage::Rows),
            Stage::Rows => match pieces.next().await {
                Some(Ok(piece)) => {
                    held.count(piece.rows());
                    (enc.piece(piece).map_err(to_box), Stage::Rows)
                }
                Some(Err(e)) => (Err(held.cut(&e)), Stage::Done),
                None => (enc.finish().map_err(to_box), Stage::Done),
            },
            Stage::Done => return None,
        };
        Some((frame, (pieces, enc, next, held)))
    });
    let frames = frames
        .map_ok(|frames| futures::stream::iter(frames.into_iter().map(Ok)))
        .try_flatten();
    stream(frames.try_filter(|b| futures::future::ready(!b.is_empty())))
}
