//! What the terminal and the caller's shell are in, read from outside: the terminal's
//! foreground group and settings, the caller's `stty -g`, and the processes under the
//! caller's shell.

use super::{descendants, find, outermost, Term, PATIENCE};
use std::path::Path;
use std::time::{Duration, Instant};

impl Term {
    /// The terminal's foreground process group, as the caller's namespace numbers it.
    pub fn foreground(&self) -> i32 {
        // TIOCGPGRP works on either side; 0 (no foreground group) comes as an error.
        rustix::termios::tcgetpgrp(&self.master).map_or(0, |p| p.as_raw_nonzero().get())
    }

    /// The caller's terminal's settings now, every flag and control character (speeds
    /// aside), as `stty -g` would print them: TCGETS on the master answers for the slave
    /// (`ioctl_tty(2)`).
    pub fn settings(&self) -> String {
        let Ok(t) = rustix::termios::tcgetattr(&self.master) else { return String::new() };
        format!(
            "{:x}:{:x}:{:x}:{:x}:{:?}",
            t.input_modes.bits(),
            t.output_modes.bits(),
            t.control_modes.bits(),
            t.local_modes.bits(),
            t.special_codes
        )
    }

    /// The caller's `stty -g` as its shell sees it between commands (the settings it
    /// restores for a foreground command, not readline's own): types
    /// `echo "@g:$(stty -g):"` and reads the answer back.
    pub fn stty_g(&mut self) -> String {
        self.line("echo \"@g:$(stty -g):\"");
        self.expect_g()
    }

    /// Wait for a `@g:SETTINGS:` line (what `echo "@g:$(stty -g):"` prints) after the mark;
    /// the settings.
    pub fn expect_g(&mut self) -> String {
        let end = Instant::now() + PATIENCE;
        loop {
            if let Some((g, at)) = find_g(&self.out[self.mark..]) {
                self.mark += at;
                self.note(format!("stty -g = {g}"));
                return g;
            }
            if Instant::now() >= end {
                self.fail("no answer to stty -g");
            }
            self.pump(Duration::from_millis(10));
        }
    }

    /// Whether the caller's terminal is in canonical mode (ICANON, `termios(3)`): cooked, as
    /// the caller's shell left it, not snug's raw mode.
    pub fn canonical(&self) -> bool {
        rustix::termios::tcgetattr(&self.master)
            .is_ok_and(|t| t.local_modes.contains(rustix::termios::LocalModes::ICANON))
    }

    /// Live descendants of the caller bash (its jobs' processes and theirs).
    pub fn descendants(&self) -> Vec<i32> {
        descendants(self.shell_pid())
    }

    /// The outermost snug process under the caller bash (not the sandbox init, which is
    /// snug's binary too); fails the test when there is none within the patience.
    pub fn snug_pid(&mut self) -> i32 {
        let shell = self.shell_pid();
        let mut pid = None;
        if !self.until(PATIENCE, || {
            pid = outermost(&descendants(shell), &crate::common::snug());
            pid.is_some()
        }) {
            self.fail("no snug process under the caller's shell");
        }
        pid.unwrap_or_default()
    }

    /// The outermost process under the caller bash running `exe` (e.g. /usr/bin/bwrap).
    pub fn pid_of(&mut self, exe: &str) -> i32 {
        let shell = self.shell_pid();
        let mut pid = None;
        if !self.until(PATIENCE, || {
            pid = outermost(&descendants(shell), Path::new(exe));
            pid.is_some()
        }) {
            self.fail(&format!("no {exe} under the caller's shell"));
        }
        pid.unwrap_or_default()
    }
}

/// The first `@g:SETTINGS:` (hex digits and colons, not the echoed command) in `hay`: the
/// settings and the end offset.
fn find_g(hay: &[u8]) -> Option<(String, usize)> {
    let tag = b"@g:";
    let mut from = 0;
    while let Some(i) = find(&hay[from..], tag) {
        let start = from + i + tag.len();
        let n = hay[start..].iter().take_while(|b| b.is_ascii_hexdigit() || **b == b':').count();
        if n > 1 && hay[start + n - 1] == b':' && hay.get(start + n) == Some(&b'\n') {
            let g = String::from_utf8_lossy(&hay[start..start + n - 1]).into_owned();
            return Some((g, start + n));
        }
        from = start;
    }
    None
}
