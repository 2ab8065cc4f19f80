//! Attaching to a container process (`kubectl attach`, `kubectl run -i`): its supervisor serves
//! the program's live output, and takes its input, on a local socket.
//!
//! The socket is a Linux abstract Unix socket named after the container attempt's log file, so
//! it needs no file (a path in the pod directory would often exceed the 108 bytes a socket
//! address holds) and goes away with the supervisor. Either side accepts a peer only if it runs
//! as the same user, so nobody else can read a session's input or feed it.
//!
//! Frames are `[kind][length: u32, big-endian][payload]`. A client says first whether it brings
//! input ([`Frame::Hello`]); then it sends input, terminal sizes and the end of its input, and
//! receives output until the program's output ends, when the supervisor closes the connection.

use std::io;
use std::path::Path;

use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc};

// Input, output and terminal sizes are numbered as Kubernetes' channel protocol numbers its
// streams, so output goes on to kubectl as it comes.
use crate::server::pod_exec::{RESIZE, STDIN};
pub(crate) use crate::server::pod_exec::{STDERR, STDOUT};

const HELLO: u8 = 254;
const END_INPUT: u8 = 255;

/// The largest frame read; output and input come in chunks far smaller.
const MAX_FRAME: usize = 1 << 20;

/// How many output chunks an attached client may fall behind before it misses some: the
/// program never waits for a slow client.
const OUTPUT_BACKLOG: usize = 1024;

/// One message between an attaching client and the supervisor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// The client's first frame.
    Hello {
        /// Whether the client brings input.
        stdin: bool,
    },
    /// Input for the program.
    Stdin(Bytes),
    /// A new terminal size.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// The client's input has ended.
    EndInput,
    /// Output of the program.
    Output {
        /// The stream, numbered as the channel protocol numbers stdout (1) and stderr (2).
        stream: u8,
        /// The bytes as the program wrote them.
        data: Bytes,
    },
}

impl Frame {
    fn encode(&self) -> Vec<u8> {
        let (kind, payload): (u8, &[u8]) = match self {
            Frame::Hello { stdin } => (HELLO, if *stdin { &[1] } else { &[0] }),
            Frame::Stdin(data) => (STDIN, data),
            Frame::Resize { width, height } => {
                let size = [width.to_be_bytes(), height.to_be_bytes()].concat();
                return encoded(RESIZE, &size);
            }
            Frame::EndInput => (END_INPUT, &[]),
            Frame::Output { stream, data } => (*stream, data),
        };
        encoded(kind, payload)
    }

    fn decode(kind: u8, payload: Vec<u8>) -> io::Result<Frame> {
        Ok(match (kind, payload.as_slice()) {
            (HELLO, [flag]) => Frame::Hello { stdin: *flag == 1 },
            (STDIN, _) => Frame::Stdin(payload.into()),
            (RESIZE, [w0, w1, h0, h1]) => Frame::Resize {
                width: u16::from_be_bytes([*w0, *w1]),
                height: u16::from_be_bytes([*h0, *h1]),
            },
            (END_INPUT, []) => Frame::EndInput,
            (STDOUT | STDERR, _) => Frame::Output { stream: kind, data: payload.into() },
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "malformed attach frame")),
        })
    }
}

fn encoded(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(5 + payload.len());
    bytes.push(kind);
    bytes.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// Writes one frame.
pub async fn write_frame(to: &mut (impl AsyncWrite + Unpin), frame: &Frame) -> io::Result<()> {
    to.write_all(&frame.encode()).await
}

/// Reads one frame; `None` at the end of the connection. Not cancel-safe: read from a task of
/// its own rather than in a `select!`.
pub async fn read_frame(from: &mut (impl AsyncRead + Unpin)) -> io::Result<Option<Frame>> {
    let kind = match from.read_u8().await {
        Ok(kind) => kind,
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error),
    };
    let length = from.read_u32().await? as usize;
    if length > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "attach frame too large"));
    }
    let mut payload = vec![0; length];
    from.read_exact(&mut payload).await?;
    Frame::decode(kind, payload).map(Some)
}

/// The abstract socket name of the container attempt logging to `log`: a digest of the log's
/// last four components (the pod's directory, with its uid, `logs`, the container and the
/// attempt), so that it does not depend on how the data directory is spelled.
fn socket_name(log: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut tail: Vec<_> = log.components().rev().take(4).collect();
    tail.reverse();
    let digest = Sha256::digest(tail.iter().collect::<std::path::PathBuf>().as_os_str().as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("keelson-attach-{hex}")
}

#[cfg(target_os = "linux")]
fn address(log: &Path) -> io::Result<std::os::unix::net::SocketAddr> {
    use std::os::linux::net::SocketAddrExt;
    std::os::unix::net::SocketAddr::from_abstract_name(socket_name(log))
}

/// Listens for attaching clients of the container attempt logging to `log`.
#[cfg(target_os = "linux")]
pub fn listen(log: &Path) -> io::Result<UnixListener> {
    let listener = std::os::unix::net::UnixListener::bind_addr(&address(log)?)?;
    listener.set_nonblocking(true)?;
    UnixListener::from_std(listener)
}

/// Connects to the supervisor of the container attempt logging to `log`.
#[cfg(target_os = "linux")]
pub async fn connect(log: &Path) -> io::Result<UnixStream> {
    // Connecting to a local socket does not block.
    let stream = std::os::unix::net::UnixStream::connect_addr(&address(log)?)?;
    stream.set_nonblocking(true)?;
    let stream = UnixStream::from_std(stream)?;
    same_user(&stream)?;
    Ok(stream)
}

/// Connects as [`connect`] does, waiting until `until` for a supervisor that is still starting
/// (its socket not bound yet).
pub async fn connect_by(log: &Path, until: tokio::time::Instant) -> io::Result<UnixStream> {
    loop {
        match connect(log).await {
            Err(error)
                if error.kind() == io::ErrorKind::ConnectionRefused
                    && tokio::time::Instant::now() < until =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            connected => return connected,
        }
    }
}

/// Attaching needs Linux's abstract sockets.
#[cfg(not(target_os = "linux"))]
pub fn listen(_log: &Path) -> io::Result<UnixListener> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "attaching needs Linux"))
}

/// Attaching needs Linux's abstract sockets.
#[cfg(not(target_os = "linux"))]
pub async fn connect(_log: &Path) -> io::Result<UnixStream> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "attaching needs Linux"))
}

/// Refuses a peer that runs as another user.
fn same_user(stream: &UnixStream) -> io::Result<()> {
    let peer = stream.peer_cred()?.uid();
    if peer == rustix::process::getuid().as_raw() {
        Ok(())
    } else {
        Err(io::Error::new(io::ErrorKind::PermissionDenied, "the attach peer is another user"))
    }
}

/// A terminal's error as an I/O error, keeping its kind when it is one.
pub fn pty_error(error: pty_process::Error) -> io::Error {
    match error {
        pty_process::Error::Io(error) => error,
        other => io::Error::other(other),
    }
}

/// What a program's input carries: bytes, or (on a terminal) a new size, or its end.
#[derive(Debug)]
pub enum Input {
    /// Bytes to write.
    Data(Bytes),
    /// A terminal's new size.
    Resize {
        /// Columns.
        width: u16,
        /// Rows.
        height: u16,
    },
    /// The end of the input.
    End,
}

/// Where a program's input goes: its stdin pipe, or its terminal.
pub enum Writer {
    /// A pipe to its stdin.
    Pipe(tokio::process::ChildStdin),
    /// The terminal it runs on.
    Terminal(pty_process::OwnedWritePty),
}

impl Writer {
    /// Writes, resizes or ends; false once the program takes no more input. The end of input
    /// closes a pipe; a terminal stays, as one has no end of input but the program's own.
    pub async fn take(&mut self, input: Input) -> bool {
        match (self, input) {
            (Writer::Pipe(pipe), Input::Data(data)) => pipe.write_all(&data).await.is_ok(),
            (Writer::Terminal(pty), Input::Data(data)) => pty.write_all(&data).await.is_ok(),
            (Writer::Terminal(pty), Input::Resize { width, height }) => {
                // A size the terminal refuses is ignored, as a kubelet ignores it.
                let _ = pty.resize(pty_process::Size::new(height, width));
                true
            }
            (Writer::Pipe(_), Input::Resize { .. }) | (Writer::Terminal(_), Input::End) => true,
            (Writer::Pipe(_), Input::End) => false,
        }
    }

    /// A task that feeds the writer what the returned sender sends, until the program takes
    /// no more; a program that does not read its input never holds up the sender's other work
    /// for longer than the channel's room.
    pub fn spawn(mut self) -> mpsc::Sender<Input> {
        let (tx, mut rx) = mpsc::channel::<Input>(16);
        tokio::spawn(async move {
            while let Some(input) = rx.recv().await {
                if !self.take(input).await {
                    return;
                }
            }
        });
        tx
    }
}

/// A chunk of output: its stream and bytes.
pub type Chunk = (u8, Bytes);

/// Where a supervised program's output is offered to attached clients.
pub fn output_channel() -> broadcast::Sender<Chunk> {
    broadcast::channel(OUTPUT_BACKLOG).0
}

/// A reader that also offers what it reads, as `stream`, to attached clients. A terminal's
/// `EIO`, which is how it says the program has closed it, reads as the end.
pub struct Tee<R> {
    inner: R,
    stream: u8,
    to: broadcast::Sender<Chunk>,
}

impl<R> Tee<R> {
    /// Offers what `inner` yields on `to` as `stream`.
    pub fn new(inner: R, stream: u8, to: broadcast::Sender<Chunk>) -> Self {
        Self { inner, stream, to }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Tee<R> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let before = buf.filled().len();
        match std::pin::Pin::new(&mut self.inner).poll_read(cx, buf) {
            std::task::Poll::Ready(Err(error))
                if error.raw_os_error() == Some(rustix::io::Errno::IO.raw_os_error()) =>
            {
                std::task::Poll::Ready(Ok(()))
            }
            std::task::Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if !read.is_empty() && self.to.receiver_count() > 0 {
                    // Nobody attached is not an error.
                    let _ = self.to.send((self.stream, Bytes::copy_from_slice(read)));
                }
                std::task::Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

/// How a container's program meets whoever attaches to it (the container's `stdin`,
/// `stdinOnce` and `tty`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Console {
    /// Its input stays open for attaching clients (else it reads nothing).
    pub stdin: bool,
    /// The input ends when the first client that brought input leaves or ends it.
    pub stdin_once: bool,
    /// It runs on a terminal of its own.
    pub tty: bool,
}

/// Serves attaching clients until `ended` (the program's output has ended): each gets the
/// output offered on `output` from its arrival on and may send input to `input`. Then it gives
/// the clients the rest of the output, and the end of it, before it returns.
pub async fn serve(
    listener: UnixListener,
    output: broadcast::Sender<Chunk>,
    input: Option<mpsc::Sender<Input>>,
    console: Console,
    ended: impl Future<Output = ()>,
) {
    let mut clients = tokio::task::JoinSet::new();
    tokio::pin!(ended);
    loop {
        tokio::select! {
            () = &mut ended => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted
                    && same_user(&stream).is_ok()
                {
                    let receiver = output.subscribe();
                    clients.spawn(client(stream, receiver, input.clone(), console.stdin_once));
                }
            }
        }
    }
    drop((listener, output, input));
    while clients.join_next().await.is_some() {}
}

/// One attached client: output to it, its input to the program, until it leaves or the output
/// ends.
async fn client(
    stream: UnixStream,
    mut output: broadcast::Receiver<Chunk>,
    input: Option<mpsc::Sender<Input>>,
    stdin_once: bool,
) {
    let (mut from, mut to) = stream.into_split();
    let sending = async move {
        loop {
            match output.recv().await {
                Ok((stream, data)) => {
                    if write_frame(&mut to, &Frame::Output { stream, data }).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
        // The client learns that the output has ended from the end of the connection.
        let _ = to.shutdown().await;
    };
    let receiving = async move {
        let mut brings_input = false;
        while let Ok(Some(frame)) = read_frame(&mut from).await {
            let for_program = match frame {
                Frame::Hello { stdin } => {
                    brings_input = stdin;
                    None
                }
                Frame::Stdin(data) => Some(Input::Data(data)),
                Frame::Resize { width, height } => Some(Input::Resize { width, height }),
                Frame::EndInput if stdin_once => Some(Input::End),
                Frame::EndInput | Frame::Output { .. } => None,
            };
            if let (Some(message), Some(input)) = (for_program, &input) {
                let _ = input.send(message).await;
            }
        }
        if brings_input
            && stdin_once
            && let Some(input) = &input
        {
            let _ = input.send(Input::End).await;
        }
    };
    tokio::select! {
        () = sending => {}
        () = receiving => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_read_back_as_written() {
        let frames = [
            Frame::Hello { stdin: true },
            Frame::Stdin(Bytes::from_static(b"ls\n")),
            Frame::Resize { width: 120, height: 40 },
            Frame::EndInput,
            Frame::Output { stream: STDERR, data: Bytes::from_static(b"oops") },
        ];
        let mut wire = Vec::new();
        for frame in &frames {
            write_frame(&mut wire, frame).await.unwrap();
        }
        let mut reader = &wire[..];
        for frame in frames {
            assert_eq!(read_frame(&mut reader).await.unwrap(), Some(frame));
        }
        assert_eq!(read_frame(&mut reader).await.unwrap(), None);
    }

    #[tokio::test]
    async fn malformed_and_oversized_frames_are_refused() {
        let mut unknown: &[u8] = &[9, 0, 0, 0, 0];
        assert!(read_frame(&mut unknown).await.is_err());
        let mut huge: &[u8] = &[STDIN, 0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut huge).await.is_err());
    }

    #[test]
    fn socket_names_fit_an_address_and_name_the_attempt_wherever_the_data_is() {
        let pod = "default_web_0f6e2c1a-7d3b-4c55-9a1e-2b8f0d3c4e5f";
        let log =
            Path::new("/tmp").join("d".repeat(200)).join("pods").join(pod).join("logs/main/0.log");
        let name = socket_name(&log);
        assert!(name.len() < 100, "{name}");
        assert_ne!(name, socket_name(&log.with_file_name("1.log")));
        let elsewhere = Path::new("data/pods").join(pod).join("logs/main/0.log");
        assert_eq!(name, socket_name(&elsewhere));
    }
}
