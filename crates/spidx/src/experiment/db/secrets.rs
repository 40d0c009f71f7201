//! Masking passwords in text before it is printed, logged, stored or rendered: a results
//! database URL carries its password in the user-info part (`postgres://u:PW@host/db`) or
//! as a parameter (`?password=PW`), and a spec or a job script may carry it as
//! `PGPASSWORD=PW`. The results database stores the spec file as written and the report
//! shows it, so every such text goes through [`mask_secrets`] first. One linear pass per
//! form: the cost stays proportional to the text however long it is.

use std::borrow::Cow;

/// What replaces a password.
pub const MASK: &str = "***";

/// `text` with every password replaced by `***`: the password of each URL's user-info part
/// (`scheme://user:PW@host`), and the value of every key ending in `password` given with
/// `=` or `:` (`?password=PW`, `&password=PW`, `PGPASSWORD=PW`, `password = "PW"`,
/// `"password": "PW"`), any letter case. Text without either form is returned as is.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let urls = mask_url_passwords(text);
    match mask_password_keys(&urls) {
        Cow::Borrowed(_) => urls,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// Bytes that end a URL's authority (`user:pw@host:port`) in running text.
fn ends_authority(b: u8) -> bool {
    matches!(
        b,
        b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'(' | b')' | b'[' | b']'
    ) || b.is_ascii_whitespace()
}

/// The user-info passwords of every `scheme://user:PW@host` in `text`, masked.
fn mask_url_passwords(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(i) = text[from..].find("://") {
        let start = from + i + 3;
        let end = bytes[start..]
            .iter()
            .position(|&b| ends_authority(b))
            .map_or(bytes.len(), |n| start + n);
        let authority = &text[start..end];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                let (pw_start, pw_end) = (start + colon + 1, start + at);
                if &text[pw_start..pw_end] != MASK {
                    out.push_str(&text[copied..pw_start]);
                    out.push_str(MASK);
                    copied = pw_end;
                }
            }
        }
        from = end.max(start);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// Bytes that end an unquoted password value.
fn ends_value(b: u8) -> bool {
    matches!(b, b'&' | b'"' | b'\'' | b'`' | b';' | b',' | b'#') || b.is_ascii_whitespace()
}

/// The values of every `…password=VALUE` / `…password: VALUE` in `text`, masked.
fn mask_password_keys(text: &str) -> Cow<'_, str> {
    const KEY: &[u8] = b"password";
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i + KEY.len() <= bytes.len() {
        if !bytes[i..i + KEY.len()].eq_ignore_ascii_case(KEY) {
            i += 1;
            continue;
        }
        let mut j = i + KEY.len();
        i = j;
        // `"password": "PW"` (JSON): the key's closing quote.
        if matches!(bytes.get(j), Some(b'"' | b'\'')) {
            j += 1;
        }
        let skip_blanks = |mut j: usize| {
            while matches!(bytes.get(j), Some(b' ' | b'\t')) {
                j += 1;
            }
            j
        };
        j = skip_blanks(j);
        if !matches!(bytes.get(j), Some(b'=' | b':')) {
            continue;
        }
        j = skip_blanks(j + 1);
        let (start, end) = match bytes.get(j) {
            Some(&q @ (b'"' | b'\'')) => {
                let start = j + 1;
                let end = bytes[start..]
                    .iter()
                    .position(|&b| b == q || b == b'\n')
                    .map_or(bytes.len(), |n| start + n);
                (start, end)
            }
            _ => {
                let end = bytes[j..]
                    .iter()
                    .position(|&b| ends_value(b))
                    .map_or(bytes.len(), |n| j + n);
                (j, end)
            }
        };
        if start < end && &text[start..end] != MASK {
            out.push_str(&text[copied..start]);
            out.push_str(MASK);
            copied = end;
        }
        i = end.max(i);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::mask_secrets;

    #[test]
    fn every_form_is_masked() {
        for (text, masked) in [
            ("postgres://u:s3cret@h:5/db", "postgres://u:***@h:5/db"),
            ("postgresql://u:s3cret@h", "postgresql://u:***@h"),
            (
                "postgres://h/db?password=s3cret",
                "postgres://h/db?password=***",
            ),
            (
                "postgres://h/db?user=u&password=s3cret&sslmode=disable",
                "postgres://h/db?user=u&password=***&sslmode=disable",
            ),
            ("PGPASSWORD=s3cret spidx run", "PGPASSWORD=*** spidx run"),
            ("export pgpassword='s 3cret'", "export pgpassword='***'"),
            (
                "results = \"postgres://u:s3cret@h/db\"",
                "results = \"postgres://u:***@h/db\"",
            ),
            ("password = \"s3cret\"", "password = \"***\""),
            ("{\"password\": \"s3cret\"}", "{\"password\": \"***\"}"),
            (
                "host=h password=s3cret user=u",
                "host=h password=*** user=u",
            ),
            (
                "a http://x:y@h and b postgres://u:p@q",
                "a http://x:***@h and b postgres://u:***@q",
            ),
        ] {
            assert_eq!(mask_secrets(text), masked, "{text}");
            assert_eq!(
                mask_secrets(masked),
                masked,
                "masking is idempotent: {masked}"
            );
        }
    }

    #[test]
    fn text_without_secrets_is_unchanged() {
        for text in [
            "",
            "postgres://u@h:5/db",
            "postgres://h/db",
            "password authentication failed for user \"u\"",
            "file:/tmp/a.img",
            "a://",
            "password",
            "x password=",
        ] {
            assert!(
                matches!(mask_secrets(text), std::borrow::Cow::Borrowed(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn long_text_is_masked_in_linear_time() {
        // Many near-misses: a quadratic scan would take minutes on 4 MB.
        let text = "://a:b".repeat(700_000) + &"passwor".repeat(600_000);
        let m = mask_secrets(&text);
        assert!(m.len() >= text.len());
    }
}
