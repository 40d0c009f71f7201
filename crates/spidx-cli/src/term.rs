//! Text from files made safe to print: every string that came from a spec, a dataset, an
//! index or a results database goes through [`safe`] before it reaches a terminal, so a
//! crafted file can neither drive the terminal (ESC and BEL sequences retitle, clear or
//! hide lines; bidirectional overrides reorder what is shown) nor show a password.
//! Control characters are escaped as `ls` and `git` do (`\x1b`, `\n`, `\u{202e}`), and
//! passwords are masked ([`spidx::experiment::db::mask_secrets`]). [`cell`] also caps a
//! table cell's length: table layout costs grow with the cell, so a multi-megabyte name
//! is cut (with its length said) before a table sees it.

use std::borrow::Cow;
use std::fmt::Write;

use spidx::experiment::db::mask_secrets;

/// Characters a table cell keeps of a longer text (the rest is replaced by a note of the
/// length): enough for any real name, wrapped by the table over a few lines.
pub const CELL_CHARS: usize = 400;

/// Whether `c` must not reach a terminal as is: C0 and C1 controls, DEL, and the
/// bidirectional embedding, override and isolate characters.
fn unsafe_char(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with passwords masked and control characters escaped (`\t`, `\n`, `\r`, `\x1b`,
/// `\u{9b}`, `\u{202e}`); text needing neither comes back borrowed.
pub fn safe(s: &str) -> Cow<'_, str> {
    escaped(s, false)
}

/// [`safe`] for text of several lines (a report, a message): line breaks and tabs kept.
pub fn safe_lines(s: &str) -> Cow<'_, str> {
    escaped(s, true)
}

fn escaped(s: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char| lines && matches!(c, '\n' | '\t');
    let masked = mask_secrets(s);
    if !masked.chars().any(|c| unsafe_char(c) && !kept(c)) {
        return masked;
    }
    let mut out = String::with_capacity(masked.len() + 16);
    for c in masked.chars() {
        match c {
            c if kept(c) => out.push(c),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 && unsafe_char(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if unsafe_char(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Characters a cell of a `--wide` table keeps: every real value whole, a crafted
/// multi-megabyte one cut (the table library's layout grows faster than the text).
pub const WIDE_CELL_CHARS: usize = 4096;

/// [`safe`] `s`, cut to [`CELL_CHARS`] characters (the rest named by its length) so that
/// a table's layout stays cheap whatever the text.
pub fn cell(s: &str) -> String {
    cell_of(s, CELL_CHARS)
}

/// [`cell`] for `--wide` tables: cut at [`WIDE_CELL_CHARS`].
pub fn wide_cell(s: &str) -> String {
    cell_of(s, WIDE_CELL_CHARS)
}

fn cell_of(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => safe(s).into_owned(),
        Some((cut, _)) => format!("{}… ({} more bytes)", safe(&s[..cut]), s.len() - cut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(safe("plain name"), "plain name");
        assert!(matches!(safe("plain"), Cow::Borrowed(_)));
        assert_eq!(
            safe("a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc"),
            "a\\x1b]0;pwned\\x07b\\x1b[2Jc"
        );
        assert_eq!(safe("x\ny\tz\r\u{7f}"), "x\\ny\\tz\\r\\x7f");
        assert_eq!(safe("\u{9b}31m \u{202e}txt"), "\\u{9b}31m \\u{202e}txt");
        assert_eq!(safe("é ü 漢字"), "é ü 漢字");
        assert_eq!(safe_lines("a\n\tb\u{1b}"), "a\n\tb\\x1b");
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            safe("postgres://u:pw@h/db?password=x \u{1b}"),
            "postgres://u:***@h/db?password=*** \\x1b"
        );
    }

    #[test]
    fn cells_are_cut() {
        let long = "é".repeat(CELL_CHARS + 10);
        let c = cell(&long);
        assert!(c.starts_with(&"é".repeat(CELL_CHARS)));
        assert!(c.ends_with("… (20 more bytes)"), "{c}");
        assert_eq!(cell("short\u{1b}"), "short\\x1b");
        // Linear: 4 MB of control characters.
        assert_eq!(safe(&"\u{1b}".repeat(4 << 20)).len(), 4 * (4 << 20));
    }
}
