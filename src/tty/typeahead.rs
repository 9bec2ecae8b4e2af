//! A ^D typed ahead at the caller's cooked terminal (SPEC T14, T15): `sleep 1; snug -- cat`
//! with `hello⏎^D` typed during the sleep must end `cat` as it ends it without snug.
//!
//! In canonical mode the line discipline keeps the end-of-file key as a NUL byte marked as a
//! line's end (`__DISABLED_CHAR`, `n_tty_receive_char_special` in `drivers/tty/n_tty.c`): a
//! canonical read ends there with nothing, but once snug has set the terminal raw, a read
//! hands the NUL out as a byte, and the sandbox's pty would take it for a typed ^@. The marks
//! are told apart by counting: `FIONREAD` under ICANON leaves them out (`inq_canon`), in raw
//! mode it counts every byte. So the bytes pending at the switch are the ones typed under
//! ICANON, and at most the difference of the two counts of the NULs among them are ends of
//! file (the rest of the difference is a line not yet finished).

use rustix::fd::AsFd;
use rustix::termios::{LocalModes, Termios};

/// What is left of the typeahead of the last switch from cooked to raw.
#[derive(Debug, Default)]
pub struct Typeahead {
    /// Bytes still to read that were typed under ICANON.
    left: usize,
    /// End-of-file marks among them, at most.
    eofs: usize,
}

impl Typeahead {
    /// The pending count a canonical read sees on `fd` now (settings `now`), before going raw;
    /// `None` when the terminal is not in canonical mode or nothing is pending.
    pub fn before(fd: impl AsFd, now: &Termios) -> Option<usize> {
        if !now.local_modes.contains(LocalModes::ICANON) {
            return None;
        }
        rustix::io::ioctl_fionread(fd).ok().map(|n| n as usize)
    }

    /// After going raw: the count now against `cooked`, the count [`Typeahead::before`] saw.
    pub fn after(fd: impl AsFd, cooked: Option<usize>) -> Typeahead {
        let Some(cooked) = cooked else { return Typeahead::default() };
        let raw = rustix::io::ioctl_fionread(fd).map_or(0, |n| n as usize);
        Typeahead { left: raw, eofs: raw.saturating_sub(cooked) }
    }

    /// Turn the end-of-file marks among `keys`, the next bytes read, into `eof` (the sandbox
    /// pty's VEOF key).
    pub fn translate(&mut self, keys: &mut [u8], eof: u8) {
        let n = keys.len().min(self.left);
        for k in keys[..n].iter_mut().filter(|k| **k == 0) {
            if self.eofs == 0 {
                break;
            }
            *k = eof;
            self.eofs -= 1;
        }
        self.left -= n;
        if self.left == 0 {
            self.eofs = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Typeahead;

    /// T14: "hello\n" and a ^D typed under ICANON (raw count 7, canonical 6): the NUL becomes
    /// the pty's EOF key; a NUL after the typeahead, or beyond the count, stays a NUL (a ^@
    /// typed in raw mode is a key of its own). Fails with `translate` a no-op.
    #[test]
    fn t14_an_end_of_file_typed_ahead_becomes_the_ptys_key() {
        let mut t = Typeahead { left: 7, eofs: 1 };
        let mut keys = *b"hello\n\0";
        t.translate(&mut keys, 4);
        assert_eq!(&keys, b"hello\n\x04");
        let mut later = *b"\0";
        t.translate(&mut later, 4);
        assert_eq!(&later, b"\0");
        // Read in two pieces; a partial line's bytes count in the difference, not as marks.
        let mut t = Typeahead { left: 9, eofs: 3 };
        let (mut a, mut b) = (*b"ab\0", *b"cd\0\0xy");
        t.translate(&mut a, 4);
        t.translate(&mut b, 4);
        assert_eq!((&a, &b), (b"ab\x04", b"cd\x04\x04xy"));
        let mut none = Typeahead::default();
        let mut keys = *b"\0";
        none.translate(&mut keys, 4);
        assert_eq!(&keys, b"\0");
    }
}
