//! Reading what a person or a program pipes in, within bounds: input
//! that never ends a line (`< /dev/zero`) costs a bounded buffer and one
//! sentence, not the machine's memory.

use std::io::{self, BufRead, Read};

use crate::ops;

/// The longest request line read from a pipe: a write of a whole memory
/// at the store's default size cap, in JSON, fits, so that it fails on
/// the cap, in one sentence, not on the line.
pub fn max_line() -> usize {
    usize::try_from(ops::max_request_line(ops::DEFAULT_MAX_FILE_SIZE)).unwrap_or(usize::MAX)
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The end of the input: nothing was read.
    End,
    /// A line (with its newline, unless the input ended first).
    Read,
    /// A line longer than allowed: it was read past and dropped.
    TooLong,
}

/// The UTF-8 byte-order mark, which Windows editors put at the top of a
/// file: a line that opens with it is read without it.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Reads the next line of `input` into `line` (cleared first), keeping at
/// most `max` bytes: a longer line is read through to its end (or the
/// input's) without being kept, and is [`Line::TooLong`]. A [`BOM`]
/// opening the line is dropped.
pub fn read_line(input: &mut dyn BufRead, line: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    line.clear();
    let (mut any, mut over) = (false, false);
    loop {
        let buffer = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buffer.is_empty() {
            return Ok(read(line, any, over));
        }
        any = true;
        let (taken, ended) = take_part(buffer, line, max, &mut over);
        input.consume(taken);
        if ended {
            return Ok(read(line, true, over));
        }
    }
}

/// One step of [`read_line`] (and of its async twin): what of `buffer`
/// belongs to the line goes into `line`, unless the line is then over
/// `max` (it is dropped, and `over` set). Returns the bytes to consume and
/// whether the line ended there.
pub(super) fn take_part(
    buffer: &[u8],
    line: &mut Vec<u8>,
    max: usize,
    over: &mut bool,
) -> (usize, bool) {
    let (taken, ended) = match buffer.iter().position(|&b| b == b'\n') {
        Some(i) => (i + 1, true),
        None => (buffer.len(), false),
    };
    if !*over && line.len() + taken <= max {
        line.extend_from_slice(&buffer[..taken]);
    } else if !*over {
        *over = true;
        line.clear();
        line.shrink_to_fit();
    }
    (taken, ended)
}

/// What [`read_line`] found once its line ended (or the input did), `any`
/// byte of it read: its [`BOM`] dropped.
pub(super) fn read(line: &mut Vec<u8>, any: bool, over: bool) -> Line {
    if line.starts_with(BOM) {
        line.drain(..BOM.len());
    }
    match (any, over) {
        (false, _) => Line::End,
        (true, false) => Line::Read,
        (true, true) => Line::TooLong,
    }
}

/// All of `input` as text, if it is UTF-8 and at most `max` bytes; else
/// one sentence naming `what` (such as "the text on stdin").
pub fn read_text(input: impl Read, max: u64, what: &str) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    input
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot read {what}: {e}"))?;
    if bytes.len() as u64 > max {
        anyhow::bail!("{what} is over {}", size(max));
    }
    if bytes.starts_with(BOM) {
        bytes.drain(..BOM.len());
    }
    String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{what} is not UTF-8 text ({e})"))
}

/// `bytes` for a person: whole MiB when it is a number of them.
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_past_the_limit_is_read_through_and_dropped() {
        let mut input = io::BufReader::with_capacity(4, &b"short\nmuch too long a line\nok"[..]);
        let mut line = Vec::new();
        assert_eq!(read_line(&mut input, &mut line, 8).unwrap(), Line::Read);
        assert_eq!(line, b"short\n");
        assert_eq!(read_line(&mut input, &mut line, 8).unwrap(), Line::TooLong);
        assert!(line.is_empty());
        assert_eq!(read_line(&mut input, &mut line, 8).unwrap(), Line::Read);
        assert_eq!(line, b"ok");
        assert_eq!(read_line(&mut input, &mut line, 8).unwrap(), Line::End);
        let mut input = std::io::Cursor::new(b"\xEF\xBB\xBF{}\n".to_vec());
        assert_eq!(read_line(&mut input, &mut line, 8).unwrap(), Line::Read);
        assert_eq!(line, b"{}\n");
    }

    #[test]
    fn endless_input_is_one_sentence() {
        let endless = io::repeat(b'x');
        let e = read_text(endless, 1 << 20, "the text on stdin").unwrap_err();
        assert_eq!(e.to_string(), "the text on stdin is over 1 MiB");
        let e = read_text(&b"\xff"[..], 10, "the text on stdin").unwrap_err();
        assert!(e.to_string().starts_with("the text on stdin is not UTF-8"));
        assert_eq!(read_text(&b"hi"[..], 2, "x").unwrap(), "hi");
    }
}
