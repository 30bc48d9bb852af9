//! Finished value answers kept on disk and sent again as they are.
//!
//! A dataset is immutable while the server runs (a new version means a new process), so the
//! bytes of a value answer depend only on what its strong ETag already covers: dataset
//! version, path, query, `Accept` and `Accept-Encoding` (the content coding included). A
//! 10-year CSV answer costs the server tens of milliseconds of CPU to format; sent from a file
//! it costs a copy. Users who fetch the same series again (scripts rerun, a popular gauge,
//! benchmarks) get it at the speed of the disk cache.
//!
//! - An answer is written while it streams, and only the second time its key is seen: a crawl
//!   that fetches every series once pays nothing for the store.
//! - It is kept only when it streamed to its end; a fault or a client that left discards it.
//! - Answers under 256 KB are not kept (`MIN_KEPT`); no file is made for them.
//! - The store is bounded in bytes; the least recently used answers make room.
//! - It lives in a private directory (mode 0700) made at start and removed at exit, so answers
//!   of a restricted service are not left readable, and no answer outlives its process. The
//!   directory of a server killed hard is removed by the next server started beside it.
//! - A request with `Cache-Control: no-cache` or `no-store` is computed afresh and not stored.

use crate::body::{Body, BoxError};
use crate::compress::Coding;
use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use hyper::body::{Frame, SizeHint};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

/// Bytes per frame of a stored answer sent again. Frames this size are reused by the
/// allocator; larger ones came fresh from the OS each time (see `encode::text::CHUNK_ROWS`).
const READ_FRAME: usize = 64 * 1024;

/// Bytes gathered before a write while an answer is stored: a few writes per megabyte
/// instead of one per body frame.
const WRITE_BUFFER: usize = 1024 * 1024;

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
                crate::body::full(bytes.slice(at(range.start)..at(range.end)))
            }
            Source::File(mut file) => match file.seek(SeekFrom::Start(range.start)) {
                Ok(_) => read_body(file, len),
                Err(e) => {
                    crate::body::stream(futures::stream::once(
                        async move { Err(BoxError::from(e)) },
                    ))
                }
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
    bytes: u64,
    clock: u64,
    next_file: u64,
}

impl Index {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
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

/// The store of finished answers.
pub struct Answers {
    dir: tempfile::TempDir,
    capacity: u64,
    min_len: usize,
    index: Mutex<Index>,
    pub hits: AtomicU64,
    /// Bytes of answers being written. They may not exceed the capacity either, so the disk
    /// holds at most twice it however many downloads are under way.
    writing: AtomicU64,
}

impl Answers {
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
        Ok(Self {
            dir,
            capacity,
            min_len,
            index: Mutex::new(Index::default()),
            hits: AtomicU64::new(0),
            writing: AtomicU64::new(0),
        })
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        // A panic while holding the lock leaves the index consistent enough to keep serving.
        self.index.lock().unwrap_or_else(|p| p.into_inner())
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

    /// The stored answer for `key`, opened; None when there is none (or it was just evicted).
    pub fn get(&self, key: &str) -> Option<Hit> {
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
        // Discarded unless taken out at the end: on a failed write, a fault, or a client that
        // left while the answer was made (this future dropped).
        let mut making = Unfinished(Some(Sink {
            answers: Arc::clone(self),
            key: key.to_owned(),
            head: Arc::new(head),
            out: Copy::Early(Vec::new()),
            len: 0,
        }));
        while let Some(frame) = body.frame().await {
            let sink = making.0.as_mut()?;
            let data = frame.ok()?;
            if let Some(d) = data.data_ref() {
                sink.write(d).ok()?;
            }
        }
        let mut sink = making.0.take()?;
        if let Copy::Early(early) = &mut sink.out {
            let bytes = Bytes::from(std::mem::take(early));
            let head = Arc::clone(&sink.head);
            sink.discard();
            return Some(Hit {
                head,
                len: bytes.len() as u64,
                source: Source::Memory(bytes),
            });
        }
        self.commit(sink);
        self.open(key)
    }

    /// Whether an answer for `key` should be stored as it streams: the second time it is seen,
    /// and only when it is not stored already.
    fn admit(&self, key: &str) -> bool {
        let mut i = self.index();
        if i.entries.contains_key(key) {
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
        let sink = Sink {
            answers: Arc::clone(self),
            key: key.to_owned(),
            head: Arc::new(head()),
            out: Copy::Early(Vec::new()),
            len: 0,
        };
        http_body_util::BodyExt::boxed_unsync(Tee {
            inner: body,
            sink: Unfinished(Some(sink)),
        })
    }

    /// A new file for an answer being written, and the name it gets when done.
    fn new_file(&self) -> std::io::Result<Copy> {
        let n = {
            let mut i = self.index();
            i.next_file += 1;
            i.next_file
        };
        let part = self.dir.path().join(format!("{n}.part"));
        let file = File::create(&part)?;
        Ok(Copy::File {
            part,
            name: self.dir.path().join(format!("{n}.answer")),
            out: BufWriter::with_capacity(WRITE_BUFFER, file),
        })
    }

    /// Takes a finished answer into the index, evicting older ones to make room.
    fn commit(&self, sink: Sink) {
        self.writing.fetch_sub(sink.len, Ordering::Relaxed);
        let Sink {
            key,
            head,
            out,
            len,
            ..
        } = sink;
        let Copy::File { part, name, out } = out else {
            return; // too short to keep
        };
        let done = out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|_| std::fs::rename(&part, &name));
        if done.is_err() || len > self.capacity {
            let _ = std::fs::remove_file(&part);
            let _ = std::fs::remove_file(&name);
            return;
        }
        let mut i = self.index();
        if let Some(old) = i.entries.remove(&key) {
            // Two requests stored the same answer at once; the later one stays.
            i.bytes -= old.len;
            let _ = std::fs::remove_file(&old.file);
        }
        i.make_room(len, self.capacity);
        let last_used = i.tick();
        i.bytes += len;
        i.entries.insert(
            key,
            Entry {
                file: name,
                len,
                head,
                last_used,
            },
        );
    }
}

/// An answer being written to the store.
struct Sink {
    answers: Arc<Answers>,
    key: String,
    head: Arc<Head>,
    out: Copy,
    len: u64,
}

/// Where the copy goes: memory until the answer is long enough to keep, then a file.
enum Copy {
    Early(Vec<u8>),
    File {
        part: PathBuf,
        name: PathBuf,
        out: BufWriter<File>,
    },
}

impl Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        let n = data.len() as u64;
        self.len += n;
        let writing = self.answers.writing.fetch_add(n, Ordering::Relaxed) + n;
        if self.len > self.answers.capacity || writing > self.answers.capacity {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        match &mut self.out {
            Copy::File { out, .. } => out.write_all(data),
            Copy::Early(early) => {
                early.extend_from_slice(data);
                if early.len() < self.answers.min_len {
                    return Ok(());
                }
                let early = std::mem::take(early);
                self.out = self.answers.new_file()?;
                match &mut self.out {
                    Copy::File { out, .. } => out.write_all(&early),
                    Copy::Early(_) => Ok(()),
                }
            }
        }
    }

    fn discard(self) {
        self.answers.writing.fetch_sub(self.len, Ordering::Relaxed);
        if let Copy::File { part, .. } = self.out {
            let _ = std::fs::remove_file(part);
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

/// A body that passes its frames on and writes their bytes to a [`Sink`]. A failed write or an
/// answer over the store's size gives up the copy, never the answer.
/// Dropped before its end (the client left, the connection broke), the copy is discarded.
struct Tee {
    inner: Body,
    sink: Unfinished,
}

impl Tee {
    fn write(&mut self, data: &[u8]) {
        if let Some(sink) = &mut self.sink.0
            && sink.write(data).is_err()
        {
            self.sink.discard();
        }
    }

    fn commit(&mut self) {
        if let Some(sink) = self.sink.0.take() {
            Arc::clone(&sink.answers).commit(sink);
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
    crate::body::stream(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::full;
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
        let answers = Arc::new(Answers::with_min_len(None, 10, 1).unwrap());
        let send = |key: &str, text: &'static str| {
            let a = Arc::clone(&answers);
            let key = key.to_owned();
            async move {
                if let Some(hit) = a.get(&key) {
                    return (true, read(hit.body()).await.unwrap());
                }
                let body = a.store(&key, head, full(text));
                (false, read(body).await.unwrap())
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

    /// An answer shorter than the least worth keeping is sent each time, and no file is made.
    #[tokio::test]
    async fn short_answers_are_not_kept() {
        let answers = Arc::new(Answers::with_min_len(None, 1 << 20, 16).unwrap());
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
        assert_eq!(answers.size(), (1, 16));
    }

    /// Answers written side by side share the capacity: the one that would take the total
    /// over it gives up its copy (and is still sent whole).
    #[tokio::test]
    async fn answers_being_written_share_the_capacity() {
        let answers = Arc::new(Answers::with_min_len(None, 10, 1).unwrap());
        let halves = |c: &'static str| {
            crate::body::stream(futures::stream::iter([
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
        assert!(answers.get("x").is_some());
        assert!(answers.get("y").is_none());
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
    }

    /// An answer made whole for a range is stored, or held in memory when short; one whose
    /// client leaves while it is made leaves no file and no bytes counted as being written.
    #[tokio::test]
    async fn answers_made_for_a_range_are_kept_or_discarded() {
        let answers = Arc::new(Answers::with_min_len(None, 1 << 20, 8).unwrap());
        let hit = answers
            .make("m", head(), full("long enough"))
            .await
            .unwrap();
        assert_eq!(read(hit.part(5..11)).await.unwrap(), Bytes::from("enough"));
        assert_eq!(answers.size(), (1, 11));
        let short = answers.make("s", head(), full("short")).await.unwrap();
        assert_eq!(read(short.part(1..3)).await.unwrap(), Bytes::from("ho"));
        assert_eq!(answers.size(), (1, 11), "short answers are not stored");

        let endless = crate::body::stream(
            futures::stream::iter([Ok(Bytes::from("first part, never finished"))])
                .chain(futures::stream::pending()),
        );
        let making = answers.make("e", head(), endless);
        assert!(futures::FutureExt::now_or_never(making).is_none());
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 1);
        assert!(answers.get("e").is_none());
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
        let answers = Answers::new(parent.path().to_str(), 1 << 20).unwrap();
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
        let answers = Arc::new(Answers::with_min_len(None, 1 << 20, 1).unwrap());
        let failing = || {
            crate::body::stream(futures::stream::iter([
                Ok(Bytes::from("part")),
                Err(BoxError::from("fault")),
            ]))
        };
        assert!(read(answers.store("k", head, failing())).await.is_err());
        assert!(read(answers.store("k", head, failing())).await.is_err());
        assert!(answers.get("k").is_none());

        let two = || {
            crate::body::stream(futures::stream::iter([
                Ok(Bytes::from("one")),
                Ok(Bytes::from("two")),
            ]))
        };
        read(answers.store("j", head, two())).await.unwrap();
        let mut body = answers.store("j", head, two());
        assert!(body.frame().await.is_some());
        drop(body);
        assert!(answers.get("j").is_none());
        assert_eq!(answers.writing.load(Ordering::Relaxed), 0);
        assert_eq!(std::fs::read_dir(answers.dir.path()).unwrap().count(), 0);
    }
}
