//! Container log files, kept the way a kubelet keeps them: one file per container attempt in
//! the CRI logging format, written as the process prints and read back for `kubectl logs`.
//!
//! Each output line of the container becomes one record
//! `<RFC 3339 UTC timestamp, nanoseconds> <stdout|stderr> <F|P> <content>\n`. A line longer than
//! [`MAX_RECORD_CONTENT`] bytes is split into `P` (partial) records followed by a final `F`
//! record; readers join them back into one line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use jiff::Timestamp;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt};
use tokio::sync::Mutex;

/// Most content bytes in one record; longer lines are split into partial records.
pub const MAX_RECORD_CONTENT: usize = 16 * 1024;

/// How often [`follow`] looks for new records when it has none.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

/// Most output bytes [`follow`] yields in one item.
const FOLLOW_BATCH: usize = 64 * 1024;

/// Block size of the backwards scan that finds where the last lines start.
const TAIL_BLOCK: u64 = 32 * 1024;

/// The directory of one pod on the node: `<data_dir>/pods/<namespace>_<name>_<uid>`.
pub fn pod_dir(data_dir: &Path, namespace: &str, name: &str, uid: &str) -> PathBuf {
    data_dir.join("pods").join(format!("{namespace}_{name}_{uid}"))
}

/// The log file of one attempt of a container: `<pod_dir>/logs/<container>/<restart_count>.log`.
pub fn log_path(pod_dir: &Path, container: &str, restart_count: u32) -> PathBuf {
    pod_dir.join("logs").join(container).join(format!("{restart_count}.log"))
}

/// The output stream a log line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogStream {
    /// The process's standard output.
    Stdout,
    /// The process's standard error.
    Stderr,
}

impl LogStream {
    /// The stream's name in a log record: `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogStream::Stdout => "stdout",
            LogStream::Stderr => "stderr",
        }
    }

    fn index(self) -> usize {
        match self {
            LogStream::Stdout => 0,
            LogStream::Stderr => 1,
        }
    }
}

/// Appends the output of one container attempt to its log file. Clones share the file, so
/// stdout and stderr can be copied concurrently; every record is written whole and flushed at
/// once, so followers see each line as soon as it is complete.
#[derive(Clone, Debug)]
pub struct LogWriter {
    file: Arc<Mutex<tokio::fs::File>>,
}

impl LogWriter {
    /// Creates (or truncates) the log file at `path` and its parent directories. On Unix the
    /// file is readable by its owner only (mode 0600): logs may hold secrets.
    pub async fn create(path: &Path) -> io::Result<Self> {
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        let file = options.open(path).await?;
        #[cfg(unix)]
        {
            // `mode` only applies to a new file; an existing one is narrowed here.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600)).await?;
        }
        Ok(Self { file: Arc::new(Mutex::new(file)) })
    }

    /// Writes `text` as complete lines of `stream`: one line per `\n`-separated part (a single
    /// trailing newline is ignored), long lines split into partial records.
    pub async fn write_line(&self, stream: LogStream, text: &[u8]) -> io::Result<()> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        for line in text.split(|&b| b == b'\n') {
            let mut rest = line;
            while rest.len() > MAX_RECORD_CONTENT {
                let (chunk, tail) = rest.split_at(MAX_RECORD_CONTENT);
                self.write_record(stream, true, chunk).await?;
                rest = tail;
            }
            self.write_record(stream, false, rest).await?;
        }
        Ok(())
    }

    /// Copies `reader` line by line into the log as `stream` until it ends. A line longer than
    /// [`MAX_RECORD_CONTENT`] is written in partial records as it arrives; a last line without
    /// a newline is written when the stream ends. If writing fails, the rest of the stream is
    /// still read (and dropped) so the process never blocks on a full pipe; the first write
    /// error is returned at the end.
    pub async fn copy_lines<R: AsyncRead + Unpin>(
        &self,
        stream: LogStream,
        reader: R,
    ) -> io::Result<()> {
        let mut reader = tokio::io::BufReader::new(reader);
        let mut line: Vec<u8> = Vec::new();
        let mut write_error = None;
        loop {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                if !line.is_empty() && write_error.is_none() {
                    self.write_record(stream, false, &line).await?;
                }
                return write_error.map_or(Ok(()), Err);
            }
            let room = MAX_RECORD_CONTENT - line.len();
            // A newline right after a full record's worth still ends that record.
            let window = &available[..available.len().min(room + 1)];
            let (take, record) = match window.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    line.extend_from_slice(&available[..newline]);
                    (newline + 1, Some(false))
                }
                None if available.len() > room => {
                    line.extend_from_slice(&available[..room]);
                    (room, Some(true))
                }
                None => {
                    line.extend_from_slice(available);
                    (available.len(), None)
                }
            };
            reader.consume(take);
            if let Some(partial) = record {
                if write_error.is_none()
                    && let Err(error) = self.write_record(stream, partial, &line).await
                {
                    write_error = Some(error);
                }
                line.clear();
            }
        }
    }

    /// Copies a process's stdout and stderr concurrently until both end (see
    /// [`LogWriter::copy_lines`]).
    pub async fn capture<O, E>(&self, stdout: O, stderr: E) -> io::Result<()>
    where
        O: AsyncRead + Unpin,
        E: AsyncRead + Unpin,
    {
        let (out, err) = tokio::join!(
            self.copy_lines(LogStream::Stdout, stdout),
            self.copy_lines(LogStream::Stderr, stderr)
        );
        out.and(err)
    }

    async fn write_record(
        &self,
        stream: LogStream,
        partial: bool,
        content: &[u8],
    ) -> io::Result<()> {
        let mut file = self.file.lock().await;
        // Stamped under the lock so timestamps never go backwards within the file.
        let record = encode_record(Timestamp::now(), stream, partial, content);
        file.write_all(&record).await?;
        file.flush().await
    }
}

/// One record in the CRI format, newline included.
fn encode_record(at: Timestamp, stream: LogStream, partial: bool, content: &[u8]) -> Vec<u8> {
    let tag = if partial { "P" } else { "F" };
    let mut record = format!("{} {} {tag} ", format_timestamp(at), stream.as_str()).into_bytes();
    record.extend_from_slice(content);
    record.push(b'\n');
    record
}

/// RFC 3339 in UTC with exactly nine fractional digits, as the kubelet writes and prints it.
fn format_timestamp(at: Timestamp) -> String {
    format!("{at:.9}")
}

/// One parsed record (its trailing newline removed).
struct Record<'a> {
    timestamp: Timestamp,
    stream: LogStream,
    partial: bool,
    content: &'a [u8],
}

/// Parses a record; `None` for a malformed one, which readers skip as the kubelet does.
fn parse_record(line: &[u8]) -> Option<Record<'_>> {
    let (timestamp, rest) = split_field(line)?;
    let (stream, rest) = split_field(rest)?;
    let (tags, content) = split_field(rest).unwrap_or((rest, &[]));
    let timestamp = std::str::from_utf8(timestamp).ok()?.parse::<Timestamp>().ok()?;
    let stream = match stream {
        b"stdout" => LogStream::Stdout,
        b"stderr" => LogStream::Stderr,
        _ => return None,
    };
    // The tag field may carry further `:`-separated tags after the first.
    let partial = match tags.split(|&b| b == b':').next()? {
        b"P" => true,
        b"F" => false,
        _ => return None,
    };
    Some(Record { timestamp, stream, partial, content })
}

fn split_field(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = text.iter().position(|&b| b == b' ')?;
    Some((&text[..space], &text[space + 1..]))
}

/// Whether a file line (with its newline) is a complete record that ends a log line.
fn ends_log_line(line: &[u8]) -> bool {
    line.strip_suffix(b"\n").and_then(parse_record).is_some_and(|record| !record.partial)
}

/// What `kubectl logs` asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Only the last this many lines (`--tail`), counted before `since` is applied.
    pub tail_lines: Option<u64>,
    /// Prefix each line with its RFC 3339 timestamp and a space (`--timestamps`).
    pub timestamps: bool,
    /// Only lines written at or after this time (`--since`, `--since-time`).
    pub since: Option<Timestamp>,
    /// Stop after this many bytes of output, even mid-line (`--limit-bytes`).
    pub limit_bytes: Option<u64>,
}

/// Reads a log file as `kubectl logs` prints it: the content of each line (partial records
/// joined, `\n` after each), prefixed by its timestamp with `timestamps`, limited by
/// `tail_lines` (lines from the end of the file, found by reading backwards), then `since`, then
/// `limit_bytes`. A line whose final record is not written yet is left out. A line split into
/// partial records carries the timestamp of its first record.
pub fn read(path: &Path, options: &LogOptions) -> io::Result<Vec<u8>> {
    let mut reader = LogReader::open(path, options)?;
    let mut out = Vec::new();
    reader.read_into(&mut out, usize::MAX)?;
    Ok(out)
}

/// Follows a log file as `kubectl logs -f` does: first what [`read`] gives, then every line as
/// it is completed in the file (checked every 100 ms), until `finished()` is true and
/// everything written before is yielded, or `limit_bytes` is reached. An I/O error is yielded
/// as the last item. Lines are only yielded whole.
pub fn follow(
    path: PathBuf,
    options: LogOptions,
    finished: impl Fn() -> bool + Send + Sync + 'static,
) -> impl Stream<Item = io::Result<Vec<u8>>> + Send {
    let state = Follower { path, options, reader: None, finished };
    futures::stream::unfold(Some(state), |state| async move {
        let mut state = state?;
        loop {
            // Asked before reading, so whatever was written before it turned true is read.
            let finished = (state.finished)();
            let (reader, out) = match state.read_batch().await {
                Ok(batch) => batch,
                Err(error) => return Some((Err(error), None)),
            };
            let exhausted = reader.limit_reached();
            state.reader = Some(reader);
            if !out.is_empty() {
                return Some((Ok(out), Some(state)));
            }
            if finished || exhausted {
                return None;
            }
            tokio::time::sleep(FOLLOW_POLL).await;
        }
    })
}

/// The state of [`follow`] between items.
struct Follower<F> {
    path: PathBuf,
    options: LogOptions,
    reader: Option<LogReader>,
    finished: F,
}

impl<F> Follower<F> {
    /// Opens the file on first use, then reads what is complete, on a blocking thread.
    async fn read_batch(&mut self) -> io::Result<(LogReader, Vec<u8>)> {
        let reader = self.reader.take();
        let path = self.path.clone();
        let options = self.options;
        tokio::task::spawn_blocking(move || {
            let mut reader = match reader {
                Some(reader) => reader,
                None => LogReader::open(&path, &options)?,
            };
            let mut out = Vec::new();
            reader.read_into(&mut out, FOLLOW_BATCH)?;
            Ok((reader, out))
        })
        .await
        .map_err(io::Error::other)?
    }
}

/// A line whose partial records have been read but not its final one.
struct PendingLine {
    timestamp: Timestamp,
    content: Vec<u8>,
}

/// Reads records forward from a position, turning them into `kubectl logs` output.
struct LogReader {
    file: BufReader<File>,
    /// The record being read; complete once it ends with a newline.
    record: Vec<u8>,
    /// Unfinished lines, per stream (the two streams' records may interleave).
    pending: [Option<PendingLine>; 2],
    timestamps: bool,
    since: Option<Timestamp>,
    /// Output bytes still allowed by `limit_bytes`.
    remaining: Option<u64>,
}

impl LogReader {
    fn open(path: &Path, options: &LogOptions) -> io::Result<Self> {
        let mut file = File::open(path)?;
        if let Some(lines) = options.tail_lines {
            let start = tail_start(&mut file, lines)?;
            file.seek(SeekFrom::Start(start))?;
        }
        Ok(Self {
            file: BufReader::new(file),
            record: Vec::new(),
            pending: [None, None],
            timestamps: options.timestamps,
            since: options.since,
            remaining: options.limit_bytes,
        })
    }

    fn limit_reached(&self) -> bool {
        self.remaining == Some(0)
    }

    /// Appends the output of the complete records available now, stopping once `out` holds at
    /// least `max_len` bytes. Appends nothing only when no complete record is left to read (or
    /// the byte limit is reached). An incomplete last record is kept for the next call.
    fn read_into(&mut self, out: &mut Vec<u8>, max_len: usize) -> io::Result<()> {
        while out.len() < max_len && !self.limit_reached() {
            let read = self.file.read_until(b'\n', &mut self.record)?;
            if read == 0 || self.record.last() != Some(&b'\n') {
                return Ok(());
            }
            let record = std::mem::take(&mut self.record);
            self.take_record(&record[..record.len() - 1], out);
            // Reuse the allocation for the next record.
            self.record = record;
            self.record.clear();
        }
        Ok(())
    }

    fn take_record(&mut self, line: &[u8], out: &mut Vec<u8>) {
        let Some(record) = parse_record(line) else { return };
        let slot = &mut self.pending[record.stream.index()];
        if record.partial {
            slot.get_or_insert_with(|| PendingLine {
                timestamp: record.timestamp,
                content: Vec::new(),
            })
            .content
            .extend_from_slice(record.content);
            return;
        }
        match slot.take() {
            Some(mut pending) => {
                pending.content.extend_from_slice(record.content);
                self.emit(pending.timestamp, &pending.content, out);
            }
            None => self.emit(record.timestamp, record.content, out),
        }
    }

    fn emit(&mut self, timestamp: Timestamp, content: &[u8], out: &mut Vec<u8>) {
        if self.since.is_some_and(|since| timestamp < since) {
            return;
        }
        let mut line = Vec::with_capacity(content.len() + 32);
        if self.timestamps {
            line.extend_from_slice(format_timestamp(timestamp).as_bytes());
            line.push(b' ');
        }
        line.extend_from_slice(content);
        line.push(b'\n');
        if let Some(remaining) = &mut self.remaining {
            let allowed = usize::try_from(*remaining).unwrap_or(usize::MAX).min(line.len());
            line.truncate(allowed);
            *remaining -= allowed as u64;
        }
        out.extend_from_slice(&line);
    }
}

/// The offset where the last `lines` complete lines of the file begin, found by reading
/// backwards in blocks: right after the final record of the line before them, or the start of
/// the file if it has no more lines than that. Memory stays bounded by a block plus one record.
fn tail_start(file: &mut File, lines: u64) -> io::Result<u64> {
    let len = file.seek(SeekFrom::End(0))?;
    // `buf` holds the file bytes `[buf_start, line_end)`; `line_end` is the end of the file
    // line looked at next (records are examined from the last one backwards).
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = len;
    let mut line_end = len;
    let mut seen = 0u64;
    loop {
        // The line's own newline (its last byte) is not where it starts.
        let searched =
            usize::try_from(line_end - buf_start).unwrap_or(usize::MAX).saturating_sub(1);
        match buf[..searched].iter().rposition(|&b| b == b'\n') {
            Some(newline) => {
                if ends_log_line(&buf[newline + 1..]) {
                    seen += 1;
                    if seen > lines {
                        return Ok(line_end);
                    }
                }
                buf.truncate(newline + 1);
                line_end = buf_start + buf.len() as u64;
            }
            None if buf_start == 0 => {
                if ends_log_line(&buf) {
                    seen += 1;
                    if seen > lines {
                        return Ok(line_end);
                    }
                }
                return Ok(0);
            }
            None => {
                let block_start = buf_start.saturating_sub(TAIL_BLOCK);
                let mut block = vec![0; usize::try_from(buf_start - block_start).unwrap_or(0)];
                file.seek(SeekFrom::Start(block_start))?;
                file.read_exact(&mut block)?;
                block.extend_from_slice(&buf);
                buf = block;
                buf_start = block_start;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn options() -> LogOptions {
        LogOptions::default()
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("utf-8 output")
    }

    /// Writes a log file by hand, one record per `(seconds, stream, tag, content)`.
    fn write_records(path: &Path, records: &[(i64, &str, &str, &str)]) {
        let mut data = String::new();
        for (seconds, stream, tag, content) in records {
            let at = Timestamp::from_second(*seconds).expect("valid time");
            data.push_str(&format!("{} {stream} {tag} {content}\n", format_timestamp(at)));
        }
        std::fs::write(path, data).expect("write log");
    }

    /// The next item of a log stream, failing the test if it takes over 5 s or is an error.
    async fn next_item<S>(stream: &mut S) -> Option<Vec<u8>>
    where
        S: Stream<Item = io::Result<Vec<u8>>> + Unpin,
    {
        let item = tokio::time::timeout(Duration::from_secs(5), stream.next()).await;
        item.expect("in time").map(|item| item.expect("readable"))
    }

    #[test]
    fn layout_is_the_kubelets() {
        let dir = pod_dir(Path::new("/data"), "default", "pi-abcde", "1234-5678");
        assert_eq!(dir, Path::new("/data/pods/default_pi-abcde_1234-5678"));
        assert_eq!(log_path(&dir, "pi", 2), dir.join("logs/pi/2.log"));
    }

    #[tokio::test]
    async fn writer_records_both_streams_in_cri_format() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("logs/c/0.log");
        let writer = LogWriter::create(&path).await.expect("create");
        let stdout: &[u8] = b"one\ntwo\nlast without newline";
        let stderr: &[u8] = b"oops\n";
        writer.capture(stdout, stderr).await.expect("capture");

        let raw = std::fs::read_to_string(&path).expect("read");
        let records: Vec<(&str, &str, &str)> = raw
            .lines()
            .map(|line| {
                let mut fields = line.splitn(4, ' ');
                let timestamp = fields.next().expect("timestamp");
                assert!(timestamp.ends_with('Z') && timestamp.len() == 30, "{timestamp}");
                timestamp.parse::<Timestamp>().expect("RFC 3339 timestamp");
                let stream = fields.next().expect("stream");
                let tag = fields.next().expect("tag");
                (stream, tag, fields.next().unwrap_or(""))
            })
            .collect();
        let stdout: Vec<_> = records.iter().filter(|r| r.0 == "stdout").collect();
        assert_eq!(
            stdout,
            [
                &("stdout", "F", "one"),
                &("stdout", "F", "two"),
                &("stdout", "F", "last without newline")
            ]
        );
        assert!(records.contains(&("stderr", "F", "oops")));
        assert_eq!(records.len(), 4);
        let mut lines: Vec<String> =
            text(read(&path, &options()).expect("read")).lines().map(str::to_owned).collect();
        lines.sort();
        assert_eq!(lines, ["last without newline", "one", "oops", "two"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn log_files_are_private_even_when_they_existed() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        std::fs::write(&path, "stale").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        LogWriter::create(&path).await.expect("create");
        let metadata = std::fs::metadata(&path).expect("metadata");
        assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
        assert_eq!(metadata.len(), 0, "an earlier file is truncated");
    }

    #[tokio::test]
    async fn a_long_line_is_split_into_partials_and_reads_back_whole() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        let writer = LogWriter::create(&path).await.expect("create");
        let long = "x".repeat(MAX_RECORD_CONTENT * 2 + 100);
        let exact = "y".repeat(MAX_RECORD_CONTENT);
        let input = format!("{long}\n{exact}\nshort\n");
        writer.copy_lines(LogStream::Stdout, input.as_bytes()).await.expect("copy");

        let raw = std::fs::read_to_string(&path).expect("read");
        let tags: Vec<&str> = raw.lines().map(|l| l.split(' ').nth(2).expect("tag")).collect();
        assert_eq!(tags, ["P", "P", "F", "F", "F"], "a line of exactly 16 KiB is one record");
        assert!(raw.lines().all(|l| l.len() <= MAX_RECORD_CONTENT + 50));

        assert_eq!(text(read(&path, &options()).expect("read")), input);
        let tail = LogOptions { tail_lines: Some(3), ..options() };
        assert_eq!(text(read(&path, &tail).expect("read")), input, "tail counts whole lines");
        let tail = LogOptions { tail_lines: Some(2), ..options() };
        assert_eq!(text(read(&path, &tail).expect("read")), format!("{exact}\nshort\n"));
    }

    #[test]
    fn partials_of_two_streams_are_joined_per_stream() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        write_records(
            &path,
            &[
                (1, "stdout", "P", "hel"),
                (2, "stderr", "F", "warning"),
                (3, "stdout", "F", "lo"),
                (4, "stdout", "P", "never finished"),
            ],
        );
        assert_eq!(text(read(&path, &options()).expect("read")), "warning\nhello\n");
    }

    #[test]
    fn tail_timestamps_since_and_limit_apply_as_the_kubelet_does() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        write_records(
            &path,
            &[
                (100, "stdout", "F", "a"),
                (200, "stderr", "F", "b"),
                (300, "stdout", "F", "c"),
                (400, "stdout", "F", ""),
                (500, "stdout", "F", "e e"),
            ],
        );
        let read = |options: LogOptions| text(read(&path, &options).expect("read"));

        assert_eq!(read(options()), "a\nb\nc\n\ne e\n");
        assert_eq!(read(LogOptions { tail_lines: Some(2), ..options() }), "\ne e\n");
        assert_eq!(read(LogOptions { tail_lines: Some(0), ..options() }), "");
        assert_eq!(read(LogOptions { tail_lines: Some(99), ..options() }), "a\nb\nc\n\ne e\n");
        assert_eq!(
            read(LogOptions { timestamps: true, tail_lines: Some(1), ..options() }),
            "1970-01-01T00:08:20.000000000Z e e\n"
        );
        let since = Some(Timestamp::from_second(300).expect("time"));
        assert_eq!(read(LogOptions { since, ..options() }), "c\n\ne e\n");
        // Tail is taken first, then since filters what is left.
        assert_eq!(read(LogOptions { since, tail_lines: Some(4), ..options() }), "c\n\ne e\n");
        assert_eq!(read(LogOptions { limit_bytes: Some(5), ..options() }), "a\nb\nc");
        assert_eq!(read(LogOptions { limit_bytes: Some(0), ..options() }), "");
    }

    #[test]
    fn tail_of_a_large_file_reads_backwards_across_blocks() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        let records: Vec<(i64, &str, &str, String)> =
            (0..5000).map(|i| (i, "stdout", "F", format!("line {i}"))).collect();
        let borrowed: Vec<(i64, &str, &str, &str)> =
            records.iter().map(|(s, st, t, c)| (*s, *st, *t, c.as_str())).collect();
        write_records(&path, &borrowed);
        assert!(std::fs::metadata(&path).expect("metadata").len() > 4 * TAIL_BLOCK);

        let out =
            text(read(&path, &LogOptions { tail_lines: Some(3000), ..options() }).expect("read"));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3000);
        assert_eq!(lines[0], "line 2000");
        assert_eq!(lines[2999], "line 4999");
    }

    #[test]
    fn malformed_and_unfinished_records_are_skipped() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        write_records(&path, &[(1, "stdout", "F", "ok"), (2, "stdin", "F", "bad stream")]);
        let mut data = std::fs::read(&path).expect("read");
        data.extend_from_slice(b"garbage line\n2024-01-01T00:00:00.000000000Z stdout F half-writ");
        std::fs::write(&path, data).expect("write");
        assert_eq!(text(read(&path, &options()).expect("read")), "ok\n");
        let tail = LogOptions { tail_lines: Some(1), ..options() };
        assert_eq!(text(read(&path, &tail).expect("read")), "ok\n");
    }

    #[tokio::test]
    async fn follow_yields_lines_as_they_are_written_and_ends_when_finished() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        let writer = LogWriter::create(&path).await.expect("create");
        writer.write_line(LogStream::Stdout, b"before").await.expect("write");

        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let stream =
            follow(path.clone(), LogOptions::default(), move || flag.load(Ordering::SeqCst));
        let mut stream = Box::pin(stream);

        let first = next_item(&mut stream).await.expect("an item");
        assert_eq!(text(first), "before\n");

        // A long line in progress is not yielded until its final record arrives.
        writer.write_record(LogStream::Stdout, true, b"par").await.expect("write");
        let waited =
            tokio::time::timeout(Duration::from_millis(400), StreamExt::next(&mut stream)).await;
        assert!(waited.is_err(), "nothing complete to yield yet");
        writer.write_record(LogStream::Stdout, false, b"tial").await.expect("write");
        let second = next_item(&mut stream).await.expect("an item");
        assert_eq!(text(second), "partial\n");

        writer.write_line(LogStream::Stderr, b"last").await.expect("write");
        done.store(true, Ordering::SeqCst);
        let mut rest = Vec::new();
        while let Some(item) = next_item(&mut stream).await {
            rest.extend(item);
        }
        assert_eq!(text(rest), "last\n");
    }

    #[tokio::test]
    async fn follow_stops_at_the_byte_limit_and_reports_a_missing_file() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("0.log");
        let writer = LogWriter::create(&path).await.expect("create");
        writer.write_line(LogStream::Stdout, b"0123456789").await.expect("write");
        let limited = LogOptions { limit_bytes: Some(4), ..options() };
        // Never finished: only the limit can end this stream.
        let items: Vec<_> = tokio::time::timeout(
            Duration::from_secs(5),
            follow(path.clone(), limited, || false).collect::<Vec<_>>(),
        )
        .await
        .expect("ends at the limit");
        let out: Vec<u8> = items.into_iter().flat_map(|item| item.expect("ok")).collect();
        assert_eq!(text(out), "0123");

        let missing = follow(tmp.path().join("nope.log"), options(), || false);
        let items: Vec<_> = missing.collect().await;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].as_ref().map_err(io::Error::kind).err(), Some(io::ErrorKind::NotFound));
    }
}
