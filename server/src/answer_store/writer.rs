//! The thread that writes the store's copies to disk.
//!
//! Writing a copy into the page cache is real work for the kernel: pages allocated
//! and zeroed, ext4's bookkeeping, the copy itself. Done on the answer's own task, through a
//! 1 MB buffer of fresh pages for each answer, it made the second request of a 10-year JSON
//! answer (the one that writes the copy) 1.2–2.7 times as slow as the first (`perf`:
//! `clear_page_erms`, `copy_folio_from_iter`, the buffer's `memmove`). Here the body frames
//! are handed over as they are (a reference count, no copy) and written on a thread of their
//! own, so the disk is never on the path of an answer.
//!
//! The frames waiting for the thread are bounded in bytes ([`QUEUED_MAX`]): a streamed answer
//! whose copy would go over it gives the copy up rather than wait for the disk; an answer made
//! whole for a range request, which has no client waiting on its frames, waits for room.

use super::{Head, Index, lock};
use bytes::Bytes;
use std::collections::HashMap;
use std::fs::File;
use std::io::{IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

/// Bytes handed to the writer and not written yet, at most: the memory the store's copies may
/// hold. More than the whole of a 10-year CSV answer (13.6 MB), so a single download's copy is
/// given up only when the disk is slow or several copies are written at once.
pub(super) const QUEUED_MAX: usize = 32 * 1024 * 1024;

/// Work for the writer, done in the order sent.
pub(super) enum Job {
    /// Frames of copy `n`, in order. `room` goes back to the queue once they are written.
    Write {
        n: u64,
        frames: Vec<Bytes>,
        room: OwnedSemaphorePermit,
    },
    /// Copy `n` is whole: it becomes the stored answer for its key.
    Finish(Finished),
    /// Copy `n` is given up.
    Discard(u64),
    /// Answered once every job sent before it is done.
    Barrier(oneshot::Sender<()>),
}

/// A copy whose answer streamed to its end.
pub(super) struct Finished {
    pub n: u64,
    pub key: String,
    pub head: Arc<Head>,
    pub len: u64,
}

pub(super) struct Writer {
    /// None only while the writer is dropped, so that the thread sees the queue end.
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    room: Arc<Semaphore>,
}

impl Writer {
    /// Starts the thread writing copies into `dir` and taking them into `index`.
    pub fn start(dir: PathBuf, index: Arc<Mutex<Index>>, capacity: u64) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("answer-store".into())
            .spawn(move || write_copies(&dir, &queue, &index, capacity))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            room: Arc::new(Semaphore::new(QUEUED_MAX)),
        })
    }

    /// Hands `job` over; false when the thread is gone (it panicked).
    pub fn send(&self, job: Job) -> bool {
        self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok())
    }

    /// Room for `len` more bytes in the queue, if there is some now.
    pub fn try_room(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        let n = u32::try_from(len).ok()?;
        Arc::clone(&self.room).try_acquire_many_owned(n).ok()
    }

    /// Room for `len` more bytes, once the thread has written enough; None when `len` is more
    /// than the queue ever holds.
    pub async fn room(&self, len: usize) -> Option<OwnedSemaphorePermit> {
        if len > QUEUED_MAX {
            return None;
        }
        let n = u32::try_from(len).ok()?;
        Arc::clone(&self.room).acquire_many_owned(n).await.ok()
    }

    /// Waits until every job sent so far is done.
    pub async fn settled(&self) {
        let (done, settled) = oneshot::channel();
        if self.send(Job::Barrier(done)) {
            let _ = settled.await;
        }
    }
}

impl Drop for Writer {
    /// Lets the thread finish what it was given, so that no file is written after the store's
    /// directory is removed (the directory is dropped after the writer).
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// All of `frames`, in as few `writev` calls as the system allows.
fn write_frames(file: &mut File, frames: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = frames.iter().map(|f| IoSlice::new(f)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match file.write_vectored(left) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn part_file(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n}.part"))
}

/// The thread's loop: one file open per copy being written, None once a write to it failed.
fn write_copies(dir: &Path, queue: &mpsc::Receiver<Job>, index: &Mutex<Index>, capacity: u64) {
    let mut open: HashMap<u64, Option<File>> = HashMap::new();
    for job in queue {
        match job {
            Job::Write { n, frames, room } => {
                let file = open
                    .entry(n)
                    .or_insert_with(|| File::create(part_file(dir, n)).ok());
                if let Some(f) = file
                    && write_frames(f, &frames).is_err()
                {
                    *file = None;
                }
                drop(room);
            }
            Job::Finish(copy) => {
                let written = open.remove(&copy.n).flatten().is_some();
                let part = part_file(dir, copy.n);
                let name = dir.join(format!("{}.answer", copy.n));
                let renamed = written && std::fs::rename(&part, &name).is_ok();
                let kept = {
                    let mut i = lock(index);
                    i.finishing.remove(&copy.key);
                    renamed && i.keep(copy.key, name.clone(), copy.len, copy.head, capacity)
                };
                if !kept {
                    let _ = std::fs::remove_file(&part);
                    let _ = std::fs::remove_file(&name);
                }
            }
            Job::Discard(n) => {
                open.remove(&n);
                let _ = std::fs::remove_file(part_file(dir, n));
            }
            Job::Barrier(done) => {
                let _ = done.send(());
            }
        }
    }
}
