//! Strings in the report (SPEC O10): valid UTF-8 as a plain JSON string, any other bytes
//! (an argument, a file name, DIR) as `{"b64": "…"}` of the bytes themselves (RFC 4648
//! base64, standard alphabet, padded), never with U+FFFD in place of what was there.

use serde::ser::{Serialize, SerializeMap, Serializer};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// Bytes as the report writes them.
#[derive(Clone, Copy, Debug)]
pub struct Text<'a>(pub &'a [u8]);

impl<'a> Text<'a> {
    /// An `OsStr`'s bytes.
    pub fn os(s: &'a OsStr) -> Text<'a> {
        Text(s.as_bytes())
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("b64", &b64(self.0))?;
                map.end()
            }
        }
    }
}

/// A path as a [`Text`], for `#[serde(serialize_with)]`, which hands over the field's own type.
#[allow(clippy::ptr_arg)]
pub fn path<S: Serializer>(p: &std::path::PathBuf, s: S) -> Result<S::Ok, S::Error> {
    Text::os(p.as_os_str()).serialize(s)
}

/// A list of `OsString`s as [`Text`]s.
pub struct Texts<'a>(pub &'a [OsString]);

impl Serialize for Texts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|a| Text::os(a)))
    }
}

/// RFC 4648 base64 of `bytes`, with `=` padding.
pub fn b64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// O10: RFC 4648's test vectors, and the JSON forms: plain for UTF-8, `b64` otherwise.
    #[test]
    fn o10_b64_and_text_forms() {
        let v = ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"];
        for (n, want) in v.iter().enumerate() {
            assert_eq!(b64(&b"foobar"[..n]), *want);
        }
        assert_eq!(b64(&[0xff, 0xfe, 0x00]), "//4A");
        let j = |b: &[u8]| serde_json::to_string(&Text(b)).unwrap();
        assert_eq!(j(b"caf\xc3\xa9"), "\"caf\u{e9}\"");
        assert_eq!(j(b"Y=\xff"), r#"{"b64":"WT3/"}"#);
        let args = [OsString::from("a"), OsStr::from_bytes(b"\xff").to_owned()];
        assert_eq!(serde_json::to_string(&Texts(&args)).unwrap(), r#"["a",{"b64":"/w=="}]"#);
    }
}
