//! The answer store: finished value answers kept on disk and sent again as they are.
//!
//! A published version never changes (a server that switches to a newer one answers from it
//! under other ETags), so the bytes of a value answer depend only on what its strong ETag
//! already covers: dataset version, path, query, `Accept` and `Accept-Encoding` (the content
//! coding included). A
//! 10-year CSV answer costs the server tens of milliseconds of CPU to format; sent from a file
//! it costs a copy. Users who fetch the same series again (scripts rerun, a popular gauge,
//! benchmarks) get it at the speed of the disk cache.
//!
//! - An answer is written while it streams, and only the second time its key is seen: a crawl
//!   that fetches every series once pays nothing for the store.
//! - The copy is written by a thread of its own (`writer`), from the body frames themselves: a
//!   streamed answer never waits for the disk, and gives its copy up when the thread is far
//!   behind. It is in the store once the thread has written it, a moment after its last byte;
//!   a request for the whole answer in that moment is made again rather than wait for the
//!   disk (a request for a range of it waits, see [`AnswerStore::get_settled`]).
//! - It is kept only when it streamed to its end; a fault or a client that left discards it.
//! - Answers under 256 KB are not kept (`MIN_KEPT`); no file is made for them.
//! - The store is bounded in bytes; the least recently used answers make room.
//! - It lives in a private directory (mode 0700) made at start and removed at exit, so answers
//!   of a restricted service are not left readable, and no answer outlives its process. The
//!   directory of a server killed hard is removed by the next server started beside it.
//! - A request with `Cache-Control: no-cache` or `no-store` is computed afresh and not stored.

use crate::http::body::{Body, BoxError};
use crate::http::compress::Coding;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use hyper::body::{Frame, SizeHint};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use writer::{Finished, Job, Writer};

mod writer;

/// Bytes per frame of a stored answer sent again. Frames this size are reused by the
/// allocator; larger ones came fresh from the OS each time (see `encode::text::CHUNK_ROWS`).
const READ_FRAME: usize = 64 * 1024;

/// Keys seen once are remembered up to this many; then the memory starts over.
const SEEN_MAX: usize = 16 * 1024;

/// Shorter answers are not kept: they cost little to make, and a store of many small files
/// would cost more to index than it saves. It also bounds the number of stored answers
/// (capacity / this), which keeps eviction's scan of the index short.
const MIN_KEPT: usize = 256 * 1024;

/// What the response of a stored answer carries besides its bytes.
#[derive(Clone)]
pub struct Head {
    pub content_type: String,
    pub coding: Option<Coding>,
    /// The handler's own headers (paging, `Content-Disposition`).
    pub headers: HeaderMap,
}

/// A whole answer ready to send, or any byte range of it.
pub struct Hit {
    pub head: Arc<Head>,
    pub len: u64,
    source: Source,
}

enum Source {
    /// A stored answer, opened.
    File(File),
    /// An answer made for a range request, too short to store.
    Memory(Bytes),
}

impl Hit {
    /// All of the answer.
    pub fn body(self) -> Body {
        let len = self.len;
        self.part(0..len)
    }

    /// Bytes `range` of the answer, which must lie inside it.
    pub fn part(self, range: Range<u64>) -> Body {
        let len = range.end.saturating_sub(range.start);
        match self.source {
            Source::Memory(bytes) => {
                let at = |n: u64| usize::try_from(n).unwrap_or(usize::MAX).min(bytes.len());
                crate::http::body::full(bytes.slice(at(range.start)..at(range.end)))
            }
            Source::File(mut file) => match file.seek(SeekFrom::Start(range.start)) {
                Ok(_) => read_body(file, len),
                Err(e) => crate::http::body::stream(futures::stream::once(async move {
                    Err(BoxError::from(e))
                })),
            },
        }
    }
}

struct Entry {
    file: PathBuf,
    len: u64,
    head: Arc<Head>,
    last_used: u64,
}

#[derive(Default)]
struct Index {
    entries: HashMap<String, Entry>,
    seen: HashSet<String>,
    /// Answers that streamed to their end, whose copies the writer has not taken in yet.
    finishing: HashSet<String>,
    bytes: u64,
    clock: u64,
    next_file: u64,
}

impl Index {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Takes a finished answer in, evicting older ones to make room; false (and nothing taken)
    /// when it is larger than the whole store.
    fn keep(
        &mut self,
        key: String,
        file: PathBuf,
        len: u64,
        head: Arc<Head>,
        capacity: u64,
    ) -> bool {
        if len > capacity {
            return false;
        }
        if let Some(old) = self.entries.remove(&key) {
            // Two requests stored the same answer at once; the later one stays.
            self.bytes -= old.len;
            let _ = std::fs::remove_file(&old.file);
        }
        self.make_room(len, capacity);
        let last_used = self.tick();
        self.bytes += len;
        self.entries.insert(
            key,
            Entry {
                file,
                len,
                head,
                last_used,
            },
        );
        true
    }

    fn next_copy(&mut self) -> u64 {
        self.next_file += 1;
        self.next_file
    }

    /// Removes least recently used answers until `incoming` more bytes fit.
    fn make_room(&mut self, incoming: u64, capacity: u64) {
        while self.bytes + incoming > capacity {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                return;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= e.len;
                // A reader that opened it keeps its handle; the name goes now.
                let _ = std::fs::remove_file(&e.file);
            }
        }
    }
}

/// Store directories are named `hydro-answers-<pid>-<random>`: the pid says whose it is.
const STORE_PREFIX: &str = "hydro-answers-";

/// Removes the store directories in `parent` of servers that are no longer running. A server
/// removes its own at exit, but one killed hard (SIGKILL, out of memory, a power cut) cannot,
/// and a server restarted again and again after crashes would fill the disk with up to
/// `answer_store_bytes` each time. Only directories owned by the user that owns `ours` (this
/// server's new store) are removed, never a link; stores of running servers, and names that
/// do not follow the pattern, are left alone. Only where `/proc` tells which processes run
/// (Linux); elsewhere nothing is removed.
fn remove_stores_of_dead_servers(parent: &Path, ours: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = ours.metadata().map(|m| m.uid()) else {
        return;
    };
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(STORE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let ours_to_remove =
            std::fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_dir() && m.uid() == owner);
        if ours_to_remove && !Path::new(&format!("/proc/{pid}")).exists() {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!("removed the answer store of stopped server {pid}"),
                Err(e) => tracing::debug!("answer store of stopped server {pid}: {e}"),
            }
        }
    }
}

/// The index, also when a panic while it was held poisoned the lock: every change to it is
/// whole before anything can panic, so it stays consistent enough to keep serving.
fn lock(index: &Mutex<Index>) -> MutexGuard<'_, Index> {
    index.lock().unwrap_or_else(|p| p.into_inner())
}

/// The store of finished answers.
pub struct AnswerStore {
    /// Declared before `dir`, so dropped first: the thread finishes before the directory goes.
    writer: Writer,
    #[allow(dead_code, reason = "held for its drop, which removes the directory")]
    dir: tempfile::TempDir,
    capacity: u64,
    min_len: usize,
    index: Arc<Mutex<Index>>,
    pub hits: AtomicU64,
    /// Copies of streamed answers given up: larger than the store allows, or the writer too far
    /// behind. For `/metrics`, where a growing count says the disk does not keep up.
    pub given_up: AtomicU64,
    /// Bytes of answers streaming into the store. They may not exceed the capacity either, so
    /// the disk holds at most about twice it however many downloads are under way.
    writing: AtomicU64,
}

impl AnswerStore {
    /// A fresh private directory inside `parent`; by default `/var/tmp`, which is on disk
    /// where `/tmp` may be memory (tmpfs), else the system's temporary directory.
    pub fn new(parent: Option<&str>, capacity: u64) -> Result<Self, String> {
        Self::with_min_len(parent, capacity, MIN_KEPT)
    }

    fn with_min_len(parent: Option<&str>, capacity: u64, min_len: usize) -> Result<Self, String> {
        let parent = match parent {
            Some(p) => PathBuf::from(p),
            None if Path::new("/var/tmp").is_dir() => PathBuf::from("/var/tmp"),
            None => std::env::temp_dir(),
        };
        let dir = tempfile::Builder::new()
            .prefix(&format!("{STORE_PREFIX}{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|e| format!("answer store in {}: {e}", parent.display()))?;
        remove_stores_of_dead_servers(&parent, dir.path());
        let index = Arc::new(Mutex::new(Index::default()));
        let writer = Writer::start(dir.path().to_owned(), Arc::clone(&index), capacity)
            .map_err(|e| format!("answer store writer: {e}"))?;
        Ok(Self {
            writer,
            dir,
            capacity,
            min_len,
            index,
            hits: AtomicU64::new(0),
            given_up: AtomicU64::new(0),
            writing: AtomicU64::new(0),
        })
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        lock(&self.index)
    }

    /// Stored answers and their bytes, for `/metrics`.
    pub fn size(&self) -> (usize, u64) {
        let i = self.index();
        (i.entries.len(), i.bytes)
    }

    /// Whether answers are kept at all.
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The stored answer for `key`, opened; None when there is none (or it was just evicted),
    /// or while its copy is still being written. Such a request is made again rather than wait:
    /// the writer's backlog when an answer's last byte goes out is the part of the copy the
    /// disk has not taken yet, and waiting for it made the third request of a 10-year answer
    /// two to four times as slow as making it (`download.py`'s "What storing costs" in the runs
    /// of 24 Nov: JSON 43.8 and 48.5 ms against 15.8 and 11.8).
    pub fn get(&self, key: &str) -> Option<Hit> {
        if self.index().finishing.contains(key) {
            return None;
        }
        self.hit(key)
    }

    /// As [`Self::get`], but an answer whose copy is being written is waited for: a byte range
    /// is cut from the whole answer, which a request made again would first have to make
    /// whole ([`Self::make`]), so waiting is never slower.
    pub async fn get_settled(&self, key: &str) -> Option<Hit> {
        let finishing = self.index().finishing.contains(key);
        if finishing {
            self.writer.settled().await;
        }
        self.hit(key)
    }

    fn hit(&self, key: &str) -> Option<Hit> {
        let hit = self.open(key)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(hit)
    }

    fn open(&self, key: &str) -> Option<Hit> {
        let (file, len, head) = {
            let mut i = self.index();
            let now = i.tick();
            let e = i.entries.get_mut(key)?;
            e.last_used = now;
            (e.file.clone(), e.len, Arc::clone(&e.head))
        };
        let file = File::open(file).ok()?;
        Some(Hit {
            head,
            len,
            source: Source::File(file),
        })
    }

    /// The whole of an answer not stored yet, made before any of it is sent, for a request of
    /// a byte range of it (a resumed download): a range needs the answer's length, which a
    /// streamed answer learns only at its end. The answer is stored as any other (the next
    /// piece of the download is a hit), or held in memory when too short to store. None when
    /// it is larger than the store, or failed while it was made.
    pub async fn make(self: &Arc<Self>, key: &str, head: Head, mut body: Body) -> Option<Hit> {
        use http_body_util::BodyExt;
        if !self.enabled() {
            return None;
        }
        // Discarded unless finished: on a failed write, a fault, or a client that left while
        // the answer was made (this future dropped).
        let mut making = Unfinished(Some(Sink::new(self, key, Arc::new(head))));
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.ok()?.into_data() else {
                continue;
            };
            let sink = making.0.as_mut()?;
            if let Some(batch) = sink.add(&data).ok()? {
                // No client waits on these frames: wait for the writer rather than give up.
                let room = self.writer.room(batch.len).await?;
                sink.hand_over(batch, room).ok()?;
            }
        }
        let sink = making.0.as_mut()?;
        let Some(rest) = sink.rest() else {
            let head = Arc::clone(&sink.head);
            let mut bytes = BytesMut::new();
            sink.held
                .frames
                .iter()
                .for_each(|b| bytes.extend_from_slice(b));
            return Some(Hit {
                head,
                len: bytes.len() as u64,
                source: Source::Memory(bytes.freeze()),
            });
        };
        let room = self.writer.room(rest.len).await?;
        sink.hand_over(rest, room).ok()?;
        making.0.take()?.finish();
        self.writer.settled().await;
        self.open(key)
    }

    /// Whether an answer for `key` should be stored as it streams: the second time it is seen,
    /// and only when it is not stored already.
    fn admit(&self, key: &str) -> bool {
        let mut i = self.index();
        if i.entries.contains_key(key) || i.finishing.contains(key) {
            return false;
        }
        if i.seen.remove(key) {
            return true;
        }
        if i.seen.len() >= SEEN_MAX {
            i.seen.clear();
        }
        i.seen.insert(key.to_owned());
        false
    }

    /// `body` as it is, written to the store on the way when `key` is admitted. `head` is
    /// called only then: most answers are not stored, and need no copy of their headers.
    pub fn store(self: &Arc<Self>, key: &str, head: impl FnOnce() -> Head, body: Body) -> Body {
        if !self.enabled() || !self.admit(key) {
            return body;
        }
        http_body_util::BodyExt::boxed_unsync(Tee {
            inner: body,
            sink: Unfinished(Some(Sink::new(self, key, Arc::new(head())))),
        })
    }
}

/// The copy is given up: the answer is larger than the store allows, the writer is too far
/// behind, or gone.
struct GiveUp;

/// Bytes handed to the writer at a time. One wake-up of its thread a frame (a CSV frame is
/// 512 rows, ~20 KB) cost more than the thread saved a 10-year CSV download.
const WRITE_BATCH: usize = 1024 * 1024;

/// Frames for the writer, in order.
#[derive(Default)]
struct Batch {
    frames: Vec<Bytes>,
    len: usize,
}

/// An answer's copy on its way to the store.
struct Sink {
    answers: Arc<AnswerStore>,
    key: String,
    head: Arc<Head>,
    /// The copy's number (its file's name), once frames went to the writer.
    n: Option<u64>,
    /// Frames not handed over yet.
    held: Batch,
    len: u64,
}

impl Sink {
    fn new(answers: &Arc<AnswerStore>, key: &str, head: Arc<Head>) -> Self {
        Self {
            answers: Arc::clone(answers),
            key: key.to_owned(),
            head,
            n: None,
            held: Batch::default(),
            len: 0,
        }
    }

    /// Takes `data` into the copy; returns the frames held so far once they make a batch.
    fn add(&mut self, data: &Bytes) -> Result<Option<Batch>, GiveUp> {
        let answers = &self.answers;
        let n = data.len() as u64;
        self.len += n;
        // Answers being written side by side may not exceed the capacity either, so the disk
        // holds at most twice it however many downloads are under way.
        let writing = answers.writing.fetch_add(n, Ordering::Relaxed) + n;
        if self.len > answers.capacity || writing > answers.capacity {
            return Err(GiveUp);
        }
        self.held.frames.push(data.clone());
        self.held.len += data.len();
        Ok((self.held.len >= WRITE_BATCH).then(|| std::mem::take(&mut self.held)))
    }

    /// At the answer's end, the frames still held; None when the answer is too short to keep
    /// (its frames stay in `held`).
    fn rest(&mut self) -> Option<Batch> {
        let long_enough = self.len >= self.answers.min_len as u64;
        long_enough.then(|| std::mem::take(&mut self.held))
    }

    /// Hands a batch to the writer, with its room in the writer's queue.
    fn hand_over(
        &mut self,
        batch: Batch,
        room: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<(), GiveUp> {
        if batch.frames.is_empty() {
            return Ok(());
        }
        let answers = &self.answers;
        let n = *self.n.get_or_insert_with(|| answers.index().next_copy());
        let job = Job::Write {
            n,
            frames: batch.frames,
            room,
        };
        if answers.writer.send(job) {
            Ok(())
        } else {
            Err(GiveUp)
        }
    }

    /// The answer streamed to its end and all of it was handed over: the writer takes the
    /// copy into the store.
    fn finish(self) {
        self.answers.writing.fetch_sub(self.len, Ordering::Relaxed);
        if let Some(n) = self.n {
            // Sent under the lock, so that a request that sees the answer finishing and waits
            // for the writer waits for this job too.
            let mut i = self.answers.index();
            i.finishing.insert(self.key.clone());
            self.answers.writer.send(Job::Finish(Finished {
                n,
                key: self.key,
                head: self.head,
                len: self.len,
            }));
        }
    }

    fn discard(self) {
        self.answers.writing.fetch_sub(self.len, Ordering::Relaxed);
        if let Some(n) = self.n {
            self.answers.writer.send(Job::Discard(n));
        }
    }
}

/// A sink whose answer is still streaming: discarded when dropped before its end, so a copy
/// is never left half written (nor its bytes counted as being written).
struct Unfinished(Option<Sink>);

impl Unfinished {
    fn discard(&mut self) {
        if let Some(sink) = self.0.take() {
            sink.discard();
        }
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        self.discard();
    }
}

/// A body that passes its frames on and hands them to a [`Sink`]. A copy over the store's
/// size, or one the writer has no room for, is given up; never the answer.
/// Dropped before its end (the client left, the connection broke), the copy is discarded.
struct Tee {
    inner: Body,
    sink: Unfinished,
}

/// Hands `batch` over if the writer has room for it now.
fn hand_over_now(sink: &mut Sink, batch: Batch) -> Result<(), GiveUp> {
    let room = sink.answers.writer.try_room(batch.len).ok_or(GiveUp)?;
    sink.hand_over(batch, room)
}

impl Tee {
    fn write(&mut self, data: &Bytes) {
        let Some(sink) = &mut self.sink.0 else {
            return;
        };
        let handed = match sink.add(data) {
            Ok(Some(batch)) => hand_over_now(sink, batch),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        if handed.is_err() {
            self.give_up();
        }
    }

    fn give_up(&mut self) {
        if let Some(sink) = self.sink.0.take() {
            sink.answers.given_up.fetch_add(1, Ordering::Relaxed);
            sink.discard();
        }
    }

    fn commit(&mut self) {
        let Some(sink) = &mut self.sink.0 else {
            return;
        };
        match sink.rest().map(|rest| hand_over_now(sink, rest)) {
            Some(Ok(())) => {
                if let Some(sink) = self.sink.0.take() {
                    sink.finish();
                }
            }
            Some(Err(GiveUp)) => self.give_up(),
            // Too short to keep: nothing was written.
            None => self.sink.discard(),
        }
    }
}

impl hyper::body::Body for Tee {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.write(data);
                }
                // hyper stops polling a body that says it has ended: commit now.
                if this.inner.is_end_stream() {
                    this.commit();
                }
            }
            Poll::Ready(Some(Err(_))) => this.sink.discard(),
            Poll::Ready(None) => this.commit(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A stored answer's file as body frames, read as the connection takes them. The file is in
/// the page cache after its first use, so reads take microseconds and run on the body's task.
fn read_body(file: File, len: u64) -> Body {
    let frames = futures::stream::unfold((file, len), |(mut file, left)| async move {
        if left == 0 {
            return None;
        }
        let want = READ_FRAME.min(usize::try_from(left).unwrap_or(READ_FRAME));
        let mut buf = BytesMut::zeroed(want);
        match file.read_exact(&mut buf) {
            Ok(()) => Some((Ok(buf.freeze()), (file, left - want as u64))),
            // Cut short (the file changed under us): end the body in an error so the
            // connection is cut rather than the answer silently short.
            Err(e) => Some((Err(BoxError::from(e)), (file, 0))),
        }
    });
    crate::http::body::stream(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::body::full;
    use futures::StreamExt;
    use http_body_util::BodyExt;

    fn head() -> Head {
        Head {
            content_type: "text/csv".into(),
            coding: None,
            headers: HeaderMap::new(),
        }
    }

    async fn read(body: Body) -> Result<Bytes, BoxError> {
        Ok(body.collect().await?.to_bytes())
    }

    /// Stored on the second sight, sent from the file from the third; the least recently used
    /// answer leaves when the store is full.
    #[tokio::test]
    async fn stores_on_second_sight_and_evicts_the_least_recently_used() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 10, 1).unwrap());
        let send = |key: &str, text: &'static str| {
            let a = Arc::clone(&answers);
            let key = key.to_owned();
            async move {
                if let Some(hit) = a.get(&key) {
                    return (true, read(hit.body()).await.unwrap());
                }
                let body = a.store(&key, head, full(text));
                let got = read(body).await.unwrap();
                a.writer.settled().await;
                (false, got)
            }
        };
        assert_eq!(send("a", "aaaa").await, (false, Bytes::from("aaaa")));
        assert_eq!(send("a", "aaaa").await, (false, Bytes::from("aaaa")));
        assert_eq!(send("a", "aaaa").await, (true, Bytes::from("aaaa")));
        send("b", "bbbb").await;
        send("b", "bbbb").await;
        assert_eq!(answers.size(), (2, 8));
        // "a" used last: "b" makes room for "c".
        assert!(send("a", "aaaa").await.0);
        send("c", "cccc").await;
        send("c", "cccc").await;
        assert_eq!(answers.size(), (2, 8));
        assert!(send("a", "aaaa").await.0);
        assert!(send("c", "cccc").await.0);
        assert!(!send("b", "bbbb").await.0);
        // Larger than the whole store: sent, never kept.
        send("d", "ddddddddddddddd").await;
        send("d", "ddddddddddddddd").await;
        assert!(!send("d", "ddddddddddddddd").await.0);
        let files = std::fs::read_dir(answers.dir.path()).unwrap().count();
        assert_eq!(files, 2, "only the stored answers are on disk");
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
    }

    /// While an answer's copy is still being written, a request for the whole answer does not
    /// wait for it (it is made again); a request for a range of it does, and is cut from it.
    #[tokio::test]
    async fn only_ranges_wait_for_a_copy_being_written() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 1 << 20, 1).unwrap());
        for _ in 0..2 {
            read(answers.store("w", head, full("written")))
                .await
                .unwrap();
        }
        // The copy as the writer leaves it between the answer's last byte and its own
        // `Finish` job: on disk (written here), the key still finishing.
        answers.writer.settled().await;
        answers.index().finishing.insert("w".into());
        assert!(answers.get("w").is_none(), "made again, not waited for");
        let hit = answers.get_settled("w").await.unwrap();
        assert_eq!(read(hit.part(1..4)).await.unwrap(), Bytes::from("rit"));
        answers.index().finishing.remove("w");
        assert!(answers.get("w").is_some());
    }

    /// An answer shorter than the least worth keeping is sent each time, and no file is made.
    #[tokio::test]
    async fn short_answers_are_not_kept() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 1 << 20, 16).unwrap());
        for _ in 0..3 {
            let body = answers.store("s", head, full("fifteen bytes.."));
            assert_eq!(read(body).await.unwrap(), Bytes::from("fifteen bytes.."));
            assert!(answers.get("s").is_none());
        }
        assert_eq!(answers.size(), (0, 0));
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 0);
        for _ in 0..2 {
            read(answers.store("l", head, full("sixteen bytes...")))
                .await
                .unwrap();
        }
        answers.writer.settled().await;
        assert_eq!(answers.size(), (1, 16));
    }

    /// Answers written side by side share the capacity: the one that would take the total
    /// over it gives up its copy (and is still sent whole).
    #[tokio::test]
    async fn answers_being_written_share_the_capacity() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 10, 1).unwrap());
        let halves = |c: &'static str| {
            crate::http::body::stream(futures::stream::iter([
                Ok(Bytes::from(c)),
                Ok(Bytes::from(c)),
            ]))
        };
        for key in ["x", "y"] {
            read(answers.store(key, head, halves("---"))).await.unwrap();
        }
        let mut x = answers.store("x", head, halves("xxx"));
        let mut y = answers.store("y", head, halves("yyy"));
        let mut got = (Vec::new(), Vec::new());
        for _ in 0..3 {
            for (body, out) in [(&mut x, &mut got.0), (&mut y, &mut got.1)] {
                if let Some(frame) = body.frame().await {
                    out.extend_from_slice(frame.unwrap().data_ref().unwrap());
                }
            }
        }
        assert_eq!((&got.0[..], &got.1[..]), (&b"xxxxxx"[..], &b"yyyyyy"[..]));
        answers.writer.settled().await;
        assert!(answers.get("x").is_some());
        assert!(answers.get("y").is_none());
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
    }

    /// An answer made whole for a range is stored, or held in memory when short; one whose
    /// client leaves while it is made leaves no file and no bytes counted as being written.
    #[tokio::test]
    async fn answers_made_for_a_range_are_kept_or_discarded() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 1 << 20, 8).unwrap());
        let hit = answers
            .make("m", head(), full("long enough"))
            .await
            .unwrap();
        assert_eq!(read(hit.part(5..11)).await.unwrap(), Bytes::from("enough"));
        assert_eq!(answers.size(), (1, 11));
        let short = answers.make("s", head(), full("short")).await.unwrap();
        assert_eq!(read(short.part(1..3)).await.unwrap(), Bytes::from("ho"));
        assert_eq!(answers.size(), (1, 11), "short answers are not stored");

        let endless = crate::http::body::stream(
            futures::stream::iter([Ok(Bytes::from("first part, never finished"))])
                .chain(futures::stream::pending()),
        );
        let making = answers.make("e", head(), endless);
        assert!(futures::FutureExt::now_or_never(making).is_none());
        answers.writer.settled().await;
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 1);
        assert!(answers.get("e").is_none());
    }

    /// With the writer's queue full, a streamed answer is sent whole and gives its copy up
    /// rather than wait for the disk; an answer made for a range waits for room, and is kept.
    #[tokio::test]
    async fn a_writer_behind_costs_the_copy_never_the_answer() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 1 << 20, 1).unwrap());
        let all_room = answers.writer.try_room(writer::QUEUED_MAX).unwrap();
        for _ in 0..2 {
            let body = answers.store("t", head, full("streamed"));
            assert_eq!(read(body).await.unwrap(), Bytes::from("streamed"));
        }
        answers.writer.settled().await;
        assert!(answers.get("t").is_none());
        assert_eq!(answers.given_up.load(Ordering::Relaxed), 1);
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);

        let making = answers.make("m", head(), full("made whole"));
        tokio::pin!(making);
        assert!(futures::poll!(&mut making).is_pending(), "waits for room");
        drop(all_room);
        let hit = making.await.unwrap();
        assert_eq!(read(hit.body()).await.unwrap(), Bytes::from("made whole"));
        assert!(answers.get("m").is_some());
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 1);
    }

    /// Stores left by servers that were killed are removed when a server starts beside them;
    /// the stores of running servers, other directories and links stay.
    #[tokio::test]
    async fn stores_of_stopped_servers_are_removed_at_start() {
        let parent = tempfile::tempdir().unwrap();
        let mut stopped = std::process::Command::new("true").spawn().unwrap();
        let dead = stopped.id();
        stopped.wait().unwrap();
        let make = |name: String| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("1.answer"), "kept bytes").unwrap();
            dir
        };
        let left = make(format!("{STORE_PREFIX}{dead}-a1b2c3"));
        let running = make(format!("{STORE_PREFIX}{}-d4e5f6", std::process::id()));
        let other = make(format!("{STORE_PREFIX}notapid"));
        let target = make("not a store".into());
        let link = parent.path().join(format!("{STORE_PREFIX}{dead}-link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let answers = AnswerStore::new(parent.path().to_str(), 1 << 20).unwrap();
        assert!(!left.exists(), "the store of a stopped server is removed");
        assert!(running.exists() && other.exists());
        assert!(
            link.exists() && target.join("1.answer").exists(),
            "links are not followed"
        );
        assert!(answers.dir.path().exists());
    }

    /// An answer that ends in an error, or is dropped half-read, is not kept.
    #[tokio::test]
    async fn broken_or_abandoned_answers_are_not_kept() {
        let answers = Arc::new(AnswerStore::with_min_len(None, 1 << 20, 1).unwrap());
        let failing = || {
            crate::http::body::stream(futures::stream::iter([
                Ok(Bytes::from("part")),
                Err(BoxError::from("fault")),
            ]))
        };
        assert!(read(answers.store("k", head, failing())).await.is_err());
        assert!(read(answers.store("k", head, failing())).await.is_err());
        assert!(answers.get("k").is_none());

        let two = || {
            crate::http::body::stream(futures::stream::iter([
                Ok(Bytes::from("one")),
                Ok(Bytes::from("two")),
            ]))
        };
        read(answers.store("j", head, two())).await.unwrap();
        let mut body = answers.store("j", head, two());
        assert!(body.frame().await.is_some());
        drop(body);
        answers.writer.settled().await;
        assert!(answers.get("j").is_none());
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 0);
    }
}
