//! A guard between a server's stdout and the protocol library. The
//! library allocates whatever a `Content-Length` header says and reads a
//! header line of any length, so a hostile or broken server could make mm
//! abort on a failed allocation. The guard reads the framing itself, with
//! bounds, and passes on only frames within them; the first frame past a
//! bound ends the connection, with the reason kept for the tool's text.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// The largest frame body accepted: far beyond any real answer (a whole
/// workspace's symbols), far below what could hurt.
pub const MAX_FRAME: u64 = 64 << 20;
/// The longest header line accepted (headers are a few dozen bytes).
const MAX_HEADER_LINE: u64 = 8 << 10;
/// At most this many header lines in one frame.
const MAX_HEADERS: usize = 32;
/// The pipe between the guard and the library.
const PIPE: usize = 64 << 10;

/// Why the guard ended a connection, once it did.
pub type Broken = Arc<Mutex<Option<String>>>;

/// Read `from` through the guard: the returned stream carries the same
/// frames, and ends at the first one past a bound, after `broken` got the
/// reason.
pub fn guard<R>(from: R, broken: Broken) -> DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (mut to, out) = tokio::io::duplex(PIPE);
    tokio::spawn(async move {
        let mut from = BufReader::new(from);
        if let Err(Some(why)) = forward(&mut from, &mut to).await {
            tracing::debug!("language server connection ended: {why}");
            *broken.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        }
        // Dropping `to` ends the library's input.
    });
    out
}

/// Pass frames on until the input ends (`Ok`), the library stops reading
/// (`Err(None)`) or a frame is past a bound (`Err(Some(why))`).
async fn forward<R, W>(from: &mut BufReader<R>, to: &mut W) -> Result<(), Option<String>>
where
    R: AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    loop {
        let mut length = None;
        let mut headers = 0;
        loop {
            line.clear();
            let n = (&mut *from)
                .take(MAX_HEADER_LINE)
                .read_until(b'\n', &mut line)
                .await
                .map_err(|_| None)?;
            if n == 0 {
                return Ok(());
            }
            if !line.ends_with(b"\n") {
                if n as u64 >= MAX_HEADER_LINE {
                    return Err(Some(format!(
                        "it sent a header line longer than {} KiB",
                        MAX_HEADER_LINE >> 10
                    )));
                }
                // Cut short by the end of the input.
                return Ok(());
            }
            if line == b"\r\n" {
                to.write_all(&line).await.map_err(|_| None)?;
                break;
            }
            headers += 1;
            if headers > MAX_HEADERS {
                return Err(Some(format!(
                    "it sent more than {MAX_HEADERS} header lines in one frame"
                )));
            }
            length = content_length(&line)?.or(length);
            to.write_all(&line).await.map_err(|_| None)?;
        }
        let Some(length) = length else {
            return Err(Some("it sent a frame without a Content-Length".to_owned()));
        };
        let copied = tokio::io::copy_buf(&mut (&mut *from).take(length), to)
            .await
            .map_err(|_| None)?;
        if copied < length {
            return Ok(());
        }
        to.flush().await.map_err(|_| None)?;
    }
}

/// The value of a `Content-Length` header line, checked against
/// [`MAX_FRAME`]; `None` for other headers.
fn content_length(line: &[u8]) -> Result<Option<u64>, Option<String>> {
    let text = String::from_utf8_lossy(line);
    let Some((name, value)) = text.trim_end().split_once(':') else {
        return Ok(None);
    };
    if !name.trim().eq_ignore_ascii_case("content-length") {
        return Ok(None);
    }
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Some(format!(
            "it sent a frame with an invalid Content-Length: {:?}",
            value.chars().take(40).collect::<String>()
        )));
    }
    match value.parse::<u64>() {
        Ok(n) if n <= MAX_FRAME => Ok(Some(n)),
        _ => Err(Some(format!(
            "it sent a frame of {} bytes, more than the {} MiB mm accepts",
            value.chars().take(40).collect::<String>(),
            MAX_FRAME >> 20
        ))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn through(input: &[u8]) -> (Vec<u8>, Option<String>) {
        let broken = Broken::default();
        let mut out = guard(std::io::Cursor::new(input.to_vec()), broken.clone());
        let mut got = Vec::new();
        out.read_to_end(&mut got).await.unwrap();
        let why = broken.lock().unwrap().clone();
        (got, why)
    }

    #[tokio::test]
    async fn frames_within_bounds_pass_unchanged() {
        let frames = b"Content-Length: 2\r\n\r\n{}Content-Type: x\r\ncontent-length:  3\r\n\r\n[1]";
        assert_eq!(through(frames).await, (frames.to_vec(), None));
    }

    #[tokio::test]
    async fn a_huge_length_ends_the_stream_before_its_body() {
        let (got, why) =
            through(b"Content-Length: 2\r\n\r\n{}Content-Length: 99999999999999\r\n\r\nxx").await;
        assert_eq!(got, b"Content-Length: 2\r\n\r\n{}");
        assert_eq!(
            why.unwrap(),
            "it sent a frame of 99999999999999 bytes, more than the 64 MiB mm accepts"
        );
        let (_, why) = through(b"Content-Length: 999999999999999999999999999\r\n\r\n").await;
        assert!(why.unwrap().contains("999999999999999999999999999 bytes"));
        let (_, why) = through(b"Content-Length: -1\r\n\r\n").await;
        assert_eq!(
            why.unwrap(),
            "it sent a frame with an invalid Content-Length: \"-1\""
        );
    }

    #[tokio::test]
    async fn an_endless_header_line_is_cut() {
        let (got, why) = through(&vec![b'x'; 100_000]).await;
        assert!(got.is_empty());
        assert_eq!(why.unwrap(), "it sent a header line longer than 8 KiB");
        let many = "X: y\r\n".repeat(40);
        let (_, why) = through(many.as_bytes()).await;
        assert_eq!(
            why.unwrap(),
            "it sent more than 32 header lines in one frame"
        );
    }

    #[tokio::test]
    async fn a_frame_without_a_length_ends_the_stream() {
        let (_, why) = through(b"Content-Type: x\r\n\r\n{}").await;
        assert_eq!(why.unwrap(), "it sent a frame without a Content-Length");
    }

    #[tokio::test]
    async fn an_input_cut_short_just_ends() {
        assert_eq!(through(b"Content-Length: 5\r\n\r\n{").await.1, None);
        assert_eq!(through(b"Content-Len").await.1, None);
    }
}
