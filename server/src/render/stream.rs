//! The body of a values answer: the engine's parts through an encoder, one frame per piece.
//!
//! Text formats encode batches on worker tasks, several at once, and send them in order: a
//! 10-year CSV download is bound by formatting numbers and timestamps, and this puts both cores
//! on it. Arrow IPC and Parquet writers carry state from batch to batch (dictionaries, the
//! footer) and run in order on the body's task.
//!
//! The permit and the query live as long as the body; a client that goes away drops both.

use crate::http::body::{Body, BoxError, stream};
use crate::render::encode::BatchEncoder;
use crate::render::encode::text::ValuesText;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use hydro_engine::AnswerPart;
use hydro_engine::EngineError;
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

pub type Parts = BoxStream<'static, Result<AnswerPart, EngineError>>;

/// Batches encoded at once ahead of the one being sent: both cores, bounded memory.
const PARALLEL_BATCHES: usize = 4;

/// Batches up to this many rows are encoded on the body's own task: that takes microseconds,
/// less than waking another core for a task (small answers such as `recent=1` waited for
/// that twice).
const INLINE_ROWS: usize = 512;

/// Reads the first piece before the status line is sent, so that a broken first file is still
/// a problem response rather than a cut connection.
pub async fn first_checked<T: Send + 'static>(
    mut parts: BoxStream<'static, Result<T, EngineError>>,
) -> Result<BoxStream<'static, Result<T, EngineError>>, EngineError> {
    match parts.next().await {
        Some(Err(e)) => Err(e),
        Some(Ok(first)) => Ok(futures::stream::once(async { Ok(first) })
            .chain(parts)
            .boxed()),
        None => Ok(parts),
    }
}

/// Who is told what a streamed answer does: the rows it sent, and a failure that cut it
/// after its status line (the server's metrics and health).
pub trait StreamWatch: Send + Sync {
    fn rows_sent(&self, rows: usize);
    fn cut(&self, cause: &str);
}

/// What a download's body holds on to until its last byte: who watches it, and its slot
/// among the heavy queries.
pub struct DownloadGuard {
    pub watch: Arc<dyn StreamWatch>,
    pub permit: OwnedSemaphorePermit,
}

impl DownloadGuard {
    fn count(&self, rows: usize) {
        self.watch.rows_sent(rows);
    }

    /// A read failed after the status line went out: the only honest signal left is to cut
    /// the body.
    fn cut(&self, e: &dyn std::fmt::Display) -> BoxError {
        tracing::error!("answer cut while streaming: {e}");
        self.watch.cut(&e.to_string());
        "query failed while streaming".into()
    }
}

/// Rows as text, batches encoded in parallel and sent in order.
pub fn text(parts: Parts, encoder: ValuesText, held: DownloadGuard) -> Body {
    let encoder = Arc::new(encoder);
    let head = encoder.head();
    let tail = encoder.tail();
    let mut separator_pending = encoder.leading_separator();
    let held = Arc::new(held);
    let counter = Arc::clone(&held);
    let rows = parts
        .map(move |piece| {
            let encoder = Arc::clone(&encoder);
            let held = Arc::clone(&counter);
            async move {
                let batch = match piece {
                    Ok(AnswerPart::Rows(b)) => b,
                    Ok(AnswerPart::Stored(_)) => return Err(held.cut(&"stored row group in text")),
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

/// Parts through a stateful encoder (Arrow IPC, Parquet), in order.
pub fn sequential(parts: Parts, encoder: Box<dyn BatchEncoder>, held: DownloadGuard) -> Body {
    enum Stage {
        Begin,
        Rows,
        Done,
    }
    let init = (parts, encoder, Stage::Begin, held);
    let frames = futures::stream::unfold(init, |(mut parts, mut enc, stage, held)| async move {
        let (frame, next) = match stage {
            Stage::Begin => (enc.begin().map_err(|e| held.cut(&e)), Stage::Rows),
            Stage::Rows => match parts.next().await {
                Some(Ok(part)) => {
                    held.count(part.rows());
                    (enc.piece(part).map_err(|e| held.cut(&e)), Stage::Rows)
                }
                Some(Err(e)) => (Err(held.cut(&e)), Stage::Done),
                None => (enc.finish().map_err(|e| held.cut(&e)), Stage::Done),
            },
            Stage::Done => return None,
        };
        Some((frame, (parts, enc, next, held)))
    });
    let frames = frames
        .map_ok(|frames| futures::stream::iter(frames.into_iter().map(Ok)))
        .try_flatten();
    stream(frames.try_filter(|b| futures::future::ready(!b.is_empty())))
}
