//! Content coding by `Accept-Encoding` (q-values honoured): zstd, br or gzip, streamed.
//! Levels favour speed: bulk downloads are limited by the encoder, not the wire, beyond a
//! few MB/s; for the same reason gzip and zstd answers are compressed in parts side by side.

use crate::http::body::{Body, BoxError};
use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};
use futures::{Stream, StreamExt};
use http_body_util::BodyExt;
use std::io::Write;

/// Bodies smaller than this are sent as they are.
pub const MIN_SIZE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    Zstd,
    Brotli,
    Gzip,
}

impl Coding {
    pub fn token(self) -> &'static str {
        match self {
            Self::Zstd => "zstd",
            Self::Brotli => "br",
            Self::Gzip => "gzip",
        }
    }
}

/// The best coding the client accepts; ties go to zstd, then br, then gzip.
pub fn choose(accept_encoding: Option<&str>) -> Option<Coding> {
    let header = accept_encoding?;
    let mut best: Option<(f32, usize, Coding)> = None;
    let mut star = None;
    let mut named = Vec::new();
    for item in header.split(',') {
        let mut parts = item.split(';');
        let token = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .map(|v| v.trim().parse::<f32>().unwrap_or(0.0))
            })
            .next()
            .unwrap_or(1.0);
        let coding = match token.as_str() {
            "zstd" => Coding::Zstd,
            "br" => Coding::Brotli,
            "gzip" | "x-gzip" => Coding::Gzip,
            "*" => {
                star = Some(q);
                continue;
            }
            _ => continue,
        };
        named.push(coding);
        let rank = [Coding::Zstd, Coding::Brotli, Coding::Gzip]
            .iter()
            .position(|c| *c == coding)
            .unwrap_or(3);
        if q > 0.0 && best.is_none_or(|(bq, br, _)| q > bq || (q == bq && rank < br)) {
            best = Some((q, rank, coding));
        }
    }
    if best.is_none()
        && let Some(q) = star.filter(|q| *q > 0.0)
    {
        let _ = q;
        return [Coding::Zstd, Coding::Brotli, Coding::Gzip]
            .into_iter()
            .find(|c| !named.contains(c));
    }
    best.map(|b| b.2)
}

/// Brotli output is sent in frames of at least this size (the last one shorter).
const FRAME_BYTES: usize = 64 * 1024;

/// Brotli's quality: a 10-year CSV answer took 253 ms at quality 3 and 150 ms at 1 for 7 %
/// more bytes (1.99 → 2.14 MB), and since the answer streams while it is compressed, quality 1
/// is the faster download on any link above about 8 MB/s.
const BROTLI_QUALITY: u32 = 1;

/// Brotli's window, 4 MB (log2; the encoder's default).
const BROTLI_WINDOW: u32 = 22;

/// Input compressed as one job. gzip and zstd answers are cut into jobs compressed side by side
/// on the runtime's workers: a sequential compressor held a 10-year CSV download to one core,
/// 2.5 × the time of the uncompressed answer. Half a MB keeps what independent zstd frames lose
/// in ratio small and a few jobs in flight a few MB.
const JOB_BYTES: usize = 512 * 1024;

/// Jobs compressed ahead of the socket.
const JOBS_AHEAD: usize = 4;

/// Deflate's window: each gzip job is primed with this much of the input before it, so that
/// cutting the answer into jobs costs (almost) no ratio, as in pigz.
const DEFLATE_WINDOW: usize = 32 * 1024;

/// Wraps a body in the encoder, streaming.
pub fn compress(body: Body, coding: Coding) -> Body {
    match coding {
        Coding::Brotli => brotli(body),
        Coding::Gzip => in_parallel(body, Joined::Gzip),
        Coding::Zstd => in_parallel(body, Joined::Zstd),
    }
}

/// Brotli streams cannot be cut into independent parts and joined, so they stay sequential.
/// The encoder is given the answer frame by frame and flushed only at its end, so that its
/// bytes follow from the answer alone: async-compression's reader flushed it whenever the
/// next frame was not ready yet, and two makings of one answer, under one strong ETag, came
/// out as different bytes (a range resumed across them would have spliced two streams).
fn brotli(body: Body) -> Body {
    let encoder = brotli::CompressorWriter::new(
        Vec::with_capacity(2 * FRAME_BYTES),
        FRAME_BYTES,
        BROTLI_QUALITY,
        BROTLI_WINDOW,
    );
    let start = Some((body.into_data_stream(), encoder));
    let frames = futures::stream::unfold(start, |state| async move {
        let (mut input, mut encoder) = state?;
        loop {
            match input.next().await {
                Some(Ok(frame)) => {
                    if let Err(e) = encoder.write_all(&frame) {
                        return Some((Err(BoxError::from(e)), None));
                    }
                    if encoder.get_ref().len() >= FRAME_BYTES {
                        let out = std::mem::replace(
                            encoder.get_mut(),
                            Vec::with_capacity(2 * FRAME_BYTES),
                        );
                        return Some((Ok(Bytes::from(out)), Some((input, encoder))));
                    }
                }
                Some(Err(e)) => return Some((Err(e), None)),
                // Finishing writes the stream's last block into the output.
                None => return Some((Ok(Bytes::from(encoder.into_inner())), None)),
            }
        }
    });
    crate::http::body::stream(frames)
}

/// The codings whose output can be made in parts and joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Joined {
    Gzip,
    Zstd,
}

/// One job's input, and for deflate the input just before it (its priming dictionary).
struct Job {
    input: Vec<u8>,
    before: Vec<u8>,
}

/// One job's output, and for gzip the CRC-32 of its input, which the trailer combines.
struct Compressed {
    bytes: Bytes,
    crc: crc32fast::Hasher,
}

/// gzip: one member (RFC 1952) whose deflate stream is the jobs' raw deflate blocks, each
/// ended with a sync flush so that the next starts on a byte boundary, then an empty final
/// block and the trailer. Decoders see one ordinary gzip stream. zstd: one frame per job,
/// frames concatenated (RFC 8878, section 3.1).
fn in_parallel(body: Body, coding: Joined) -> Body {
    let compressed = jobs(body.into_data_stream(), coding)
        .map(move |job| async move {
            let job = job?;
            tokio::spawn(async move { compress_job(coding, &job) })
                .await
                .map_err(BoxError::from)?
        })
        .buffered(JOBS_AHEAD);
    let stitch = Stitch {
        jobs: Box::pin(compressed),
        coding,
        crc: crc32fast::Hasher::new(),
        stage: Stage::Header,
    };
    crate::http::body::stream(futures::stream::unfold(stitch, Stitch::next))
}

/// Cuts the answer's frames into jobs of at least `JOB_BYTES` (the last one shorter).
fn jobs(
    frames: impl Stream<Item = Result<Bytes, BoxError>> + Send + Unpin,
    coding: Joined,
) -> impl Stream<Item = Result<Job, BoxError>> + Send {
    let primed = coding == Joined::Gzip;
    futures::stream::unfold(Some((frames, Vec::new())), move |state| async move {
        let (mut frames, before) = state?;
        let mut input = Vec::with_capacity(JOB_BYTES + FRAME_BYTES);
        while input.len() < JOB_BYTES {
            match frames.next().await {
                Some(Ok(frame)) => input.extend_from_slice(&frame),
                Some(Err(e)) => return Some((Err(e), None)),
                None if input.is_empty() => return None,
                None => return Some((Ok(Job { input, before }), None)),
            }
        }
        let next_before = if primed {
            input[input.len().saturating_sub(DEFLATE_WINDOW)..].to_vec()
        } else {
            Vec::new()
        };
        Some((Ok(Job { input, before }), Some((frames, next_before))))
    })
}

fn compress_job(coding: Joined, job: &Job) -> Result<Compressed, BoxError> {
    let mut crc = crc32fast::Hasher::new();
    let bytes = match coding {
        Joined::Gzip => {
            crc.update(&job.input);
            deflate_job(job)?
        }
        Joined::Zstd => zstd::bulk::compress(&job.input, 1)?,
    };
    Ok(Compressed {
        bytes: bytes.into(),
        crc,
    })
}

/// Raw deflate of a job, primed with the input before it and ended with a sync flush.
fn deflate_job(job: &Job) -> Result<Vec<u8>, BoxError> {
    let mut deflate = Compress::new(Compression::fast(), false);
    if !job.before.is_empty() {
        deflate.set_dictionary(&job.before)?;
    }
    let mut out = Vec::with_capacity(job.input.len() / 3 + 1024);
    loop {
        let consumed = deflate.total_in() as usize;
        deflate.compress_vec(&job.input[consumed..], &mut out, FlushCompress::Sync)?;
        // A flush is complete when all input is in and the output had room to spare.
        if deflate.total_in() as usize == job.input.len() && out.len() < out.capacity() {
            return Ok(out);
        }
        out.reserve(out.capacity());
    }
}

/// gzip header: deflate, no name or time, "fastest" (XFL 4), OS unknown.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff];
/// An empty final deflate block with fixed codes: BFINAL, BTYPE 01, end of block.
const DEFLATE_END: [u8; 2] = [0x03, 0x00];

/// Puts the jobs' output in order between the coding's header and trailer.
struct Stitch<J> {
    jobs: std::pin::Pin<Box<J>>,
    coding: Joined,
    crc: crc32fast::Hasher,
    stage: Stage,
}

enum Stage {
    Header,
    /// Jobs are coming; whether one has been sent (zstd needs at least one frame).
    Jobs {
        sent: bool,
    },
    Done,
}

impl<J: Stream<Item = Result<Compressed, BoxError>>> Stitch<J> {
    async fn next(mut self) -> Option<(Result<Bytes, BoxError>, Self)> {
        loop {
            match self.stage {
                Stage::Header => {
                    self.stage = Stage::Jobs { sent: false };
                    if self.coding == Joined::Gzip {
                        return Some((Ok(Bytes::from_static(&GZIP_HEADER)), self));
                    }
                }
                Stage::Jobs { sent } => match self.jobs.next().await {
                    Some(Ok(job)) => {
                        self.crc.combine(&job.crc);
                        self.stage = Stage::Jobs { sent: true };
                        return Some((Ok(job.bytes), self));
                    }
                    // No trailer after a fault: the answer must not look complete.
                    Some(Err(e)) => {
                        self.stage = Stage::Done;
                        return Some((Err(e), self));
                    }
                    None => {
                        self.stage = Stage::Done;
                        if let Some(trailer) = self.trailer(sent) {
                            return Some((trailer, self));
                        }
                    }
                },
                Stage::Done => return None,
            }
        }
    }

    /// What follows the last job: gzip's end, or for an empty zstd answer one empty frame.
    fn trailer(&self, sent: bool) -> Option<Result<Bytes, BoxError>> {
        match self.coding {
            Joined::Gzip => {
                let mut end = DEFLATE_END.to_vec();
                end.extend_from_slice(&self.crc.clone().finalize().to_le_bytes());
                // ISIZE is the input's length modulo 2^32 (RFC 1952).
                end.extend_from_slice(&(self.crc.total_len() as u32).to_le_bytes());
                Some(Ok(end.into()))
            }
            Joined::Zstd if !sent => Some(
                zstd::bulk::compress(&[], 1)
                    .map(Bytes::from)
                    .map_err(BoxError::from),
            ),
            Joined::Zstd => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q_values_and_preferences() {
        assert_eq!(choose(None), None);
        assert_eq!(choose(Some("gzip")), Some(Coding::Gzip));
        assert_eq!(choose(Some("gzip, br, zstd")), Some(Coding::Zstd));
        assert_eq!(choose(Some("gzip;q=1, br;q=0.5")), Some(Coding::Gzip));
        assert_eq!(choose(Some("gzip;q=0")), None);
        assert_eq!(choose(Some("identity")), None);
        assert_eq!(choose(Some("*")), Some(Coding::Zstd));
    }

    /// The compressed body of `frames` (each `None` a fault), drained: its bytes, and whether
    /// it ended in a fault.
    fn drain(coding: Coding, frames: Vec<Option<&'static [u8]>>) -> (Vec<u8>, bool) {
        drain_stream(coding, futures::stream::iter(faults(frames)))
    }

    fn faults(frames: Vec<Option<&'static [u8]>>) -> impl Iterator<Item = Result<Bytes, BoxError>> {
        frames.into_iter().map(|f| {
            f.map(Bytes::from_static)
                .ok_or_else(|| BoxError::from("fault"))
        })
    }

    fn drain_stream(
        coding: Coding,
        frames: impl Stream<Item = Result<Bytes, BoxError>> + Send + Sync + 'static,
    ) -> (Vec<u8>, bool) {
        let body = compress(crate::http::body::stream(frames), coding);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut out = Vec::new();
            let mut data = body.into_data_stream();
            while let Some(chunk) = data.next().await {
                match chunk {
                    Ok(bytes) => out.extend_from_slice(&bytes),
                    Err(_) => return (out, true),
                }
            }
            (out, false)
        })
    }

    fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    }

    /// An empty answer is still a whole gzip member, zstd frame and brotli stream, which decode
    /// to nothing.
    #[test]
    fn empty_answers_decode_to_nothing() {
        let (gz, fault) = drain(Coding::Gzip, vec![]);
        assert!(!fault);
        assert_eq!(gunzip(&gz).expect("gzip"), b"");
        let (zst, fault) = drain(Coding::Zstd, vec![]);
        assert!(!fault);
        assert!(!zst.is_empty());
        assert_eq!(zstd::stream::decode_all(&zst[..]).expect("zstd"), b"");
        let (br, fault) = drain(Coding::Brotli, vec![]);
        assert!(!fault);
        let mut plain = Vec::new();
        brotli_decompressor::BrotliDecompress(&mut &br[..], &mut plain).expect("brotli");
        assert!(!br.is_empty() && plain.is_empty());
    }

    /// A fault mid-answer ends the body in an error, and the gzip or brotli sent so far lacks
    /// its end: a client cannot take the cut answer for a whole one.
    #[test]
    fn a_fault_leaves_the_answer_incomplete() {
        let (gz, fault) = drain(Coding::Gzip, vec![Some(b"t,v\n1,2\n"), None]);
        assert!(fault);
        assert!(gunzip(&gz).is_err(), "{} bytes decode", gz.len());
        let (whole, fault) = drain(Coding::Gzip, vec![Some(b"t,v\n1,2\n")]);
        assert!(!fault);
        assert_eq!(gunzip(&whole).expect("gzip"), b"t,v\n1,2\n");
        let (br, fault) = drain(Coding::Brotli, vec![Some(b"t,v\n1,2\n"), None]);
        assert!(fault);
        let mut plain = Vec::new();
        assert!(brotli_decompressor::BrotliDecompress(&mut &br[..], &mut plain).is_err());
    }

    /// An answer's compressed bytes do not depend on when its frames arrive: the same frames,
    /// each first making the encoder wait (`Pending`), give the same bytes as frames all ready.
    #[test]
    fn compressed_bytes_follow_from_the_answer_alone() {
        let text: &'static [u8] = (0..400)
            .map(|i| format!("2024-01-01T00:{:02}:00Z,{}.{:03},good\n", i % 60, i * 7, i))
            .collect::<String>()
            .leak()
            .as_bytes();
        let frames: Vec<Option<&'static [u8]>> = text.chunks(1000).map(Some).collect();
        for coding in [Coding::Brotli, Coding::Gzip, Coding::Zstd] {
            let (ready, fault) = drain(coding, frames.clone());
            assert!(!fault);
            let stalling = futures::stream::iter(faults(frames.clone())).then(|f| async move {
                tokio::task::yield_now().await;
                f
            });
            let (stalled, fault) = drain_stream(coding, stalling);
            assert!(!fault);
            assert_eq!(ready, stalled, "{coding:?}");
            if coding == Coding::Brotli {
                let mut plain = Vec::new();
                brotli_decompressor::BrotliDecompress(&mut &ready[..], &mut plain).expect("brotli");
                assert_eq!(plain, text);
            }
        }
    }
}
