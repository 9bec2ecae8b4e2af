//! Shell quoting for lines people read and paste (`--dry-run`, hints, `-v` logs): a leaf
//! module, so the run side (pasta's log line) need not import the plan side's renderer.

use std::borrow::Cow;

pub mod text;

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

/// Quote bytes for bash, zsh and ksh: a valid UTF-8 word as [`quote`] does; any other in
/// ANSI-C quotes (`$'…'`, POSIX.1-2024 `sh`), each byte outside printable ASCII as `\xHH`,
/// so the shell gives back exactly these bytes (SPEC O10, O11: a name that is not UTF-8 is
/// never shown as another one).
pub fn quote_bytes(word: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(word) {
        return quote(text);
    }
    Cow::Owned(ansi_c(word))
}

/// `word` in ANSI-C quotes (`$'…'`) for bash, zsh and ksh, each byte outside printable ASCII
/// as `\xHH` and `\` and `'` escaped: one line that the shell gives back as exactly these
/// bytes, and that no other word is shown as.
pub fn ansi_c(word: &[u8]) -> String {
    let mut out = String::from("$'");
    for &b in word {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

/// Whether `c` is a control character a terminal may act on: C0 (below U+0020), DEL and C1
/// (U+0080–U+009F, where U+009B is an 8-bit CSI), `ascii(7)`, ECMA-48.
fn is_control(c: char) -> bool {
    c.is_control()
}

/// `text` with each control character written as `\xHH` (C0 and DEL: ESC is `\x1b`) or
/// `\u{HH}` (C1), so a line shown to a person cannot move its cursor, set its window's
/// title or answer its queries (SPEC L5, R4). Everything else is unchanged.
pub fn controls_escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !is_control(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:02x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// JSON text with DEL and the C1 controls, which JSON leaves raw, as `\u00HH` escapes (C0
/// ones are escaped already, RFC 8259 7): the same string to a parser, inert on a terminal.
/// Such characters only occur inside JSON strings, so the text stays valid.
pub fn json_controls_escaped(json: &str) -> String {
    json.chars()
        .map(|c| if is_control(c) && (c as u32) >= 0x7f { format!("\\u{:04x}", c as u32) } else { c.to_string() })
        .collect()
}

/// `words` quoted and joined with spaces: a line that a shell splits back into `words`.
pub fn quote_line(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L5, R4: ESC, BEL, a newline, DEL and an 8-bit CSI come out as inert text; plain text and
    /// other Unicode are unchanged. Fails without the fix: the text came back as it was.
    #[test]
    fn l5_controls_escaped() {
        assert_eq!(controls_escaped("plain é ✓"), "plain é ✓");
        assert_eq!(controls_escaped("a\u{1b}]0;pwned\u{7}b\nc\u{7f}\u{9b}"), "a\\x1b]0;pwned\\x07b\\x0ac\\x7f\\u{9b}");
        let json = serde_json::to_string(&"x\u{1b}\u{9b}\u{7f}").unwrap();
        let safe = json_controls_escaped(&json);
        assert!(!safe.chars().any(char::is_control), "{safe}");
        assert_eq!(serde_json::from_str::<String>(&safe).unwrap(), "x\u{1b}\u{9b}\u{7f}");
    }
}
