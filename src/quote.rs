//! Shell quoting for lines people read and paste (`--dry-run`, hints, `-v` logs): a leaf
//! module, so the run side (pasta's log line) need not import the plan side's renderer.

use std::borrow::Cow;

/// Quote `word` for a POSIX shell (sh(1p), 2.2 Quoting): unchanged when it only holds
/// characters no shell treats specially, else in single quotes, each `'` written `'\''`.
/// The empty word becomes `''`.
pub fn quote(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return Cow::Borrowed(word);
    }
    Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
}

/// `words` quoted and joined with spaces: a line that a shell splits back into `words`.
pub fn quote_line(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}
