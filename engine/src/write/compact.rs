//! `hydro compact`: a station's months packed into one object a year.
//!
//! A month per file keeps appends cheap, but on object storage every file a download reads is
//! a request, and the store's time per request, not its bandwidth, sets the pace (a 10-year
//! series: 120 GETs). Compaction, as Delta Lake's OPTIMIZE or Iceberg's `rewrite_data_files`
//! do for their tables, rewrites what has settled into fewer, larger objects: each station-year
//! whose months before `before` are not yet in one pack gets a pack
//! (`values/station=<id>/year=<YYYY>/months-<g>.pack`) holding those month files back to back,
//! byte for byte as they were written. The files table of the new version names, for each
//! packed month, its pack and where in it the file begins; readers read the same bytes from
//! there (`dataset::month_file`), and an answer's months of one pack are read in one request
//! (`query::pack_read`).
//!
//! Months at or after `before` stay files of their own, so the appends of a live archive keep
//! rewriting one station-month; an append to a packed month writes that month anew as a file
//! of its own (the pack's copy is then read by no one), and the next compaction packs the year
//! again. Like any publish it deletes nothing: `vacuum` removes the month files (and packs) no
//! kept version names. A compaction that fails publishes nothing and deletes the packs it
//! wrote; one that finds nothing to pack publishes nothing either.

use crate::dataset::layout;
use crate::dataset::manifest::{Packed, PublishKind, ValueFile};
use crate::dataset::read_published;
use crate::error::{EngineError, Result};
use crate::model::month::Month;
use crate::write::writer::DatasetWriter;
use datafusion::object_store::ObjectStore;
use datafusion::object_store::buffered::BufWriter;
use datafusion::object_store::path::Path;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

/// Packs written at once. Each holds a month file read and the upload's buffer in memory,
/// and a pack larger than the buffer has up to [`PARTS_AT_ONCE`] parts of that size in
/// flight: at most 4 x (3 x 5 MiB + a month file) whatever the archive's size.
const PACKS_AT_ONCE: usize = 4;

/// Bytes of a pack buffered before they go to the store; a larger pack goes up in parts of
/// this size (S3's smallest part).
const UPLOAD_BUFFER: usize = 5 << 20;

/// Parts of one pack uploaded at once.
const PARTS_AT_ONCE: usize = 2;

/// What a compaction did.
#[derive(Debug, PartialEq, Eq)]
pub struct Compacted {
    /// The version published, if there was anything to pack.
    pub generation: Option<u64>,
    pub packs: u64,
    /// Month files copied into packs.
    pub months: u64,
    pub bytes: u64,
}

/// Packs, for every station-year, its months before `before` (see the module doc), telling
/// `progress` how many station-years of how many are done.
pub async fn compact(
    store: Arc<dyn ObjectStore>,
    before: Month,
    progress: impl Fn(u64, u64),
) -> Result<Compacted> {
    let writer = DatasetWriter::begin(Arc::clone(&store), PublishKind::Compact).await?;
    match pack_all(&store, &writer, before, &progress).await {
        Ok((compacted, published)) if compacted.packs > 0 => {
            let manifest = writer
                .publish(
                    &published.stations,
                    published.parameters,
                    &published.characteristics,
                )
                .await?;
            Ok(Compacted {
                generation: Some(manifest.generation),
                ..compacted
            })
        }
        Ok((compacted, _)) => {
            writer.give_up_unwritten().await;
            Ok(compacted)
        }
        Err(e) => {
            writer.abandon().await;
            Err(e)
        }
    }
}

/// Writes the packs and lists every file of the new version; what was packed, and the
/// published version's catalog (which the new version keeps).
async fn pack_all(
    store: &Arc<dyn ObjectStore>,
    writer: &DatasetWriter,
    before: Month,
    progress: &impl Fn(u64, u64),
) -> Result<(Compacted, crate::dataset::Published)> {
    let mut published = read_published(store.as_ref())
        .await?
        .ok_or_else(|| EngineError::InvalidQuery("no dataset is published there".into()))?;
    let mut files = std::mem::take(&mut published.files);
    files.sort_by(|a, b| (&a.station, a.month).cmp(&(&b.station, b.month)));
    let mut years: Vec<Vec<ValueFile>> = Vec::new();
    for file in files {
        match years.last_mut() {
            Some(year)
                if year[0].station == file.station && year[0].month.year() == file.month.year() =>
            {
                year.push(file)
            }
            _ => years.push(vec![file]),
        }
    }
    let generation = writer.generation();
    let total = years.len() as u64;
    let mut done = 0;
    let packed = futures::stream::iter(years)
        .map(|mut year| async move {
            let settled = year.iter().take_while(|f| f.month < before).count();
            let rest = year.split_off(settled);
            let packed = if needs_pack(&year) {
                Some(write_pack(store, &mut year, generation).await?)
            } else {
                None
            };
            for file in year.into_iter().chain(rest) {
                writer.carry(file).await?;
            }
            Ok::<_, EngineError>(packed)
        })
        .buffer_unordered(PACKS_AT_ONCE)
        .try_fold(
            Compacted {
                generation: None,
                packs: 0,
                months: 0,
                bytes: 0,
            },
            |mut sum, packed| {
                done += 1;
                progress(done, total);
                if let Some((months, bytes)) = packed {
                    sum.packs += 1;
                    sum.months += months;
                    sum.bytes += bytes;
                }
                futures::future::ok(sum)
            },
        )
        .await?;
    Ok((packed, published))
}

/// Whether a station-year's settled months are worth a (new) pack: two or more, not all in
/// one pack already.
fn needs_pack(months: &[ValueFile]) -> bool {
    let one_pack = months.first().and_then(|f| f.pack).is_some_and(|p| {
        months
            .iter()
            .all(|f| f.pack.map(|q| q.generation) == Some(p.generation))
    });
    months.len() >= 2 && !one_pack
}

/// Copies the month files `months` (of one station-year, ascending) into a new pack, and
/// points each at its place there; the months and bytes copied.
async fn write_pack(
    store: &Arc<dyn ObjectStore>,
    months: &mut [ValueFile],
    generation: u64,
) -> Result<(u64, u64)> {
    let Some(first) = months.first() else {
        return Ok((0, 0));
    };
    let path = layout::pack_path(&first.station, first.month.year(), generation);
    let mut pack =
        BufWriter::with_capacity(Arc::clone(store), Path::from(path.as_str()), UPLOAD_BUFFER)
            .with_max_concurrency(PARTS_AT_ONCE);
    let mut offset = 0;
    for file in months.iter_mut() {
        let start = file.offset();
        // `get_ranges`, which a local directory serves in place (`storage::local`): a blocking
        // task per read had the process make 78 threads, and hold twice the memory, to pack
        // 300 station-years.
        let range = start..start + file.size;
        let read = store
            .get_ranges(&Path::from(file.object()), std::slice::from_ref(&range))
            .await?;
        let bytes = read.into_iter().next().unwrap_or_default();
        if bytes.len() as u64 != file.size || !bytes.ends_with(b"PAR1") {
            return Err(EngineError::corrupt(format!(
                "{}: not the {} bytes of a Parquet file the files table says",
                file.path(),
                file.size
            )));
        }
        pack.write_all(&bytes)
            .await
            .map_err(|e| io_error(&path, e))?;
        file.pack = Some(Packed { generation, offset });
        offset += file.size;
    }
    pack.shutdown().await.map_err(|e| io_error(&path, e))?;
    Ok((months.len() as u64, offset))
}

fn io_error(path: &str, source: std::io::Error) -> EngineError {
    EngineError::Io {
        what: format!("{path}: writing the pack"),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::object_store::ObjectStoreExt;
    use datafusion::object_store::memory::InMemory;

    /// A month file of `len` bytes of `fill` (and Parquet's closing magic).
    fn month(month: &str, fill: u8, len: usize) -> (ValueFile, Vec<u8>) {
        let mut bytes = vec![fill; len];
        bytes.extend_from_slice(b"PAR1");
        let file = ValueFile {
            station: "s".parse().unwrap(),
            month: month.parse().unwrap(),
            generation: 1,
            size: bytes.len() as u64,
            series: Box::new([]),
            pack: None,
        };
        (file, bytes)
    }

    #[tokio::test]
    async fn a_pack_larger_than_the_upload_buffer_goes_up_in_parts() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut months = Vec::new();
        let mut written = Vec::new();
        for (i, m) in ["2024-01", "2024-02", "2024-03"].into_iter().enumerate() {
            let (file, bytes) = month(m, i as u8, 3 << 20);
            store
                .put(&Path::from(file.path()), bytes.clone().into())
                .await
                .unwrap();
            months.push(file);
            written.push(bytes);
        }
        let (n, bytes) = write_pack(&store, &mut months, 2).await.unwrap();
        assert_eq!((n, bytes), (3, 3 * ((3 << 20) + 4)));
        assert!(bytes as usize > UPLOAD_BUFFER);
        let object = months[0].object();
        assert_eq!(object, "values/station=s/year=2024/months-2.pack");
        let pack = store.get(&Path::from(object)).await.unwrap();
        let pack = pack.bytes().await.unwrap();
        assert_eq!(pack.len() as u64, bytes);
        for (file, original) in months.iter().zip(&written) {
            let at = file.offset() as usize;
            assert!(
                pack[at..at + original.len()] == original[..],
                "{}",
                file.month
            );
        }
    }

    #[tokio::test]
    async fn a_month_file_not_as_listed_stops_the_pack() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (mut file, bytes) = month("2024-01", 7, 100);
        store
            .put(&Path::from(file.path()), bytes.into())
            .await
            .unwrap();
        // Listed larger than it is.
        file.size += 10;
        let e = write_pack(&store, &mut [file], 2).await.unwrap_err();
        assert!(e.to_string().contains("month=2024-01"), "{e}");
    }
}
