//! Spill files: where the rows of an import wait, partitioned by station-month, between reading
//! and writing.
//!
//! Each reading worker has one spill file and a small buffer per bucket; a full buffer is
//! appended to the file as one block, and the file's index notes which bucket the block holds.
//! A bucket is read back by gathering its blocks from every worker's file. Spill files are
//! unlinked as soon as they are created, so they vanish with the process however it ends.

use super::rows::{REC_BYTES, Rec, SeriesIndex};
use crate::model::month::Month;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The bucket of a station-month, and a second hash for splitting a bucket further.
pub(super) fn bucket_hash(station: u32, month: Month) -> u64 {
    let x = (u64::from(station) << 32) ^ (month.to_index() as u64);
    // SplitMix64's finaliser: every input bit moves every output bit.
    let x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(super) fn bucket_of(hash: u64, buckets: usize) -> usize {
    ((hash >> 32) % buckets as u64) as usize
}

/// Which of `parts` a record of a bucket that is read in parts belongs to.
pub(super) fn part_of(hash: u64, parts: usize) -> usize {
    ((hash & 0xffff_ffff) % parts as u64) as usize
}

/// One block of records in a spill file.
struct SpillBlock {
    bucket: u32,
    offset: u64,
    len: u32,
}

/// One worker's spill file.
pub(super) struct SpillFile {
    file: File,
    end: u64,
    blocks: Vec<SpillBlock>,
}

impl SpillFile {
    fn create(dir: &Path, worker: usize) -> io::Result<Self> {
        let path = dir.join(format!(
            "hydro-import-{}-{worker}-{}.spill",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(Self {
            file,
            end: 0,
            blocks: Vec::new(),
        })
    }

    fn append(&mut self, bucket: usize, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.blocks.push(SpillBlock {
            bucket: bucket as u32,
            offset: self.end,
            len: bytes.len() as u32,
        });
        self.end += bytes.len() as u64;
        Ok(())
    }
}

/// Bytes every spill file holds for `bucket`.
pub(super) fn bucket_bytes(spills: &[SpillFile], bucket: usize) -> u64 {
    spills
        .iter()
        .flat_map(|s| &s.blocks)
        .filter(|b| b.bucket as usize == bucket)
        .map(|b| u64::from(b.len))
        .sum()
}

/// How many records of `bucket` fall in each of `parts` parts (see [`part_of`]).
pub(super) fn count_parts(
    spills: &[SpillFile],
    bucket: usize,
    parts: usize,
    part: &dyn Fn(&Rec) -> usize,
) -> io::Result<Vec<usize>> {
    let mut counts = vec![0usize; parts];
    each_record(spills, bucket, &mut |rec| counts[part(&rec)] += 1)?;
    Ok(counts)
}

/// Appends to `out` the records of `bucket` for which `keep` holds.
pub(super) fn read_bucket(
    spills: &[SpillFile],
    bucket: usize,
    keep: &dyn Fn(&Rec) -> bool,
    out: &mut Vec<Rec>,
) -> io::Result<()> {
    each_record(spills, bucket, &mut |rec| {
        if keep(&rec) {
            out.push(rec);
        }
    })
}

fn each_record(spills: &[SpillFile], bucket: usize, f: &mut dyn FnMut(Rec)) -> io::Result<()> {
    let mut buf = Vec::new();
    for spill in spills {
        for block in spill.blocks.iter().filter(|b| b.bucket as usize == bucket) {
            buf.resize(block.len as usize, 0);
            spill.file.read_exact_at(&mut buf, block.offset)?;
            for chunk in buf.chunks_exact(REC_BYTES) {
                let rec = Rec::decode(chunk.try_into().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "spill block cut short")
                })?);
                f(rec);
            }
        }
    }
    Ok(())
}

/// One reading worker's side of the partitioning: a buffer per bucket, and its spill file.
pub(super) struct Partitioner<'a> {
    index: &'a SeriesIndex,
    spill: SpillFile,
    buffers: Vec<Vec<u8>>,
    buffer_bytes: usize,
}

impl<'a> Partitioner<'a> {
    pub(super) fn new(
        index: &'a SeriesIndex,
        dir: &Path,
        worker: usize,
        buckets: usize,
        buffer_bytes: usize,
    ) -> io::Result<Self> {
        Ok(Self {
            index,
            spill: SpillFile::create(dir, worker)?,
            buffers: vec![Vec::new(); buckets],
            // Whole records per block.
            buffer_bytes: buffer_bytes.div_ceil(REC_BYTES) * REC_BYTES,
        })
    }

    pub(super) fn push(&mut self, rec: &Rec) -> io::Result<()> {
        let station = self.index.station_of[rec.series as usize];
        let bucket = bucket_of(bucket_hash(station, Month::of(rec.ts)), self.buffers.len());
        let buffer = &mut self.buffers[bucket];
        if buffer.capacity() == 0 {
            buffer.reserve_exact(self.buffer_bytes);
        }
        rec.encode(buffer);
        if buffer.len() >= self.buffer_bytes {
            self.spill.append(bucket, buffer)?;
            buffer.clear();
        }
        Ok(())
    }

    /// Writes what the buffers still hold and hands over the spill file.
    pub(super) fn finish(mut self) -> io::Result<SpillFile> {
        for (bucket, buffer) in self.buffers.iter().enumerate() {
            if !buffer.is_empty() {
                self.spill.append(bucket, buffer)?;
            }
        }
        self.spill.file.flush()?;
        Ok(self.spill)
    }
}
