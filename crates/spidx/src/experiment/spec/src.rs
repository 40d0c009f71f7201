//! The spec file's text and the helpers that turn a spanned value's problem into an error
//! naming the file, the line and the key.

use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::raw::{Opt, Text};
use crate::units::parse_percent;
use crate::{Error, Result};

/// The spec file's text, to turn spans into line numbers.
pub(super) struct Src<'a> {
    pub(super) file: String,
    pub(super) text: &'a str,
    pub(super) dir: PathBuf,
}

impl Src<'_> {
    pub(super) fn line(&self, span: &Range<usize>) -> usize {
        let at = span.start.min(self.text.len());
        self.text[..at].matches('\n').count() + 1
    }

    pub(super) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> Error {
        Error::invalid(
            format!("spec {} line {}", self.file, self.line(&span)),
            format!("{key}: {message}"),
        )
    }

    pub(super) fn at<T>(
        &self,
        v: &Spanned<T>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> Error {
        self.err(v.span(), key, message)
    }

    pub(super) fn path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }

    /// Converts a library error about a value into a spec error at its line.
    pub(super) fn wrap<T, U>(&self, v: &Spanned<U>, key: &str, r: Result<T>) -> Result<T> {
        r.map_err(|e| self.at(v, key, strip_invalid(&e)))
    }

    pub(super) fn count(&self, v: &Spanned<i64>, key: &str, min: i64) -> Result<u64> {
        if *v.get_ref() < min {
            return Err(self.at(v, key, format!("{} is less than {min}", v.get_ref())));
        }
        Ok(*v.get_ref() as u64)
    }

    pub(super) fn seed(&self, v: &Opt<i64>, key: &str, default: u64) -> Result<u64> {
        match v {
            Some(s) => self.count(s, key, 0),
            None => Ok(default),
        }
    }

    pub(super) fn percent(&self, v: &Spanned<Text>, key: &str) -> Result<f64> {
        self.wrap(v, key, parse_percent(key, &v.get_ref().0))
    }
}

/// The message of an `InvalidOption` without its "invalid WHAT:" prefix.
pub(super) fn strip_invalid(e: &Error) -> String {
    match e {
        Error::InvalidOption { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
