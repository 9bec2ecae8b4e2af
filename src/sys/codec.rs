//! The one encoding of every small message between snug's own processes: a tag byte, then
//! an i32 little-endian, five bytes. It carries the channel's orders and reports (snug and
//! its sandbox init), the `exec` socket's requests and reports (`snug exec` and init), the
//! control socket's signal request, and the error a start-up child writes to its error pipe
//! before `execve(2)`. Both ends are the same binary, so the layout needs no version.
//!
//! Pure and allocation-free: a child between fork and exec may encode (`signal-safety(7)`).

/// The length of one frame, in bytes.
pub const FRAME: usize = 5;

/// `tag` and `value` as one frame.
pub const fn encode(tag: u8, value: i32) -> [u8; FRAME] {
    let v = value.to_le_bytes();
    [tag, v[0], v[1], v[2], v[3]]
}

/// The tag and value of a frame; `None` for bytes of any other length.
pub fn decode(bytes: &[u8]) -> Option<(u8, i32)> {
    match *bytes {
        [tag, a, b, c, d] => Some((tag, i32::from_le_bytes([a, b, c, d]))),
        _ => None,
    }
}

/// The value of a frame tagged `tag`; `None` for another tag or shape.
pub fn value_of(bytes: &[u8], tag: u8) -> Option<i32> {
    decode(bytes).filter(|&(t, _)| t == tag).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_reject_other_shapes() {
        for v in [0, 1, -1, 0x0f00, i32::MIN, i32::MAX] {
            assert_eq!(decode(&encode(7, v)), Some((7, v)));
        }
        assert_eq!(encode(b'X', 0x0102_0304), [b'X', 4, 3, 2, 1]);
        assert_eq!(decode(b"X12"), None);
        assert_eq!(decode(&[1, 0, 0, 0, 0, 0]), None);
        assert_eq!(value_of(&encode(b'P', 9), b'X'), None);
        assert_eq!(value_of(&encode(b'P', 9), b'P'), Some(9));
    }
}
