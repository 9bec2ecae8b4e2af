//! bwrap's stderr: its error line before init's hello (the sandbox never started), else
//! each line as a `snug: bwrap:` line (R4).

use super::SupervisorLoop;

impl SupervisorLoop {
    /// Read what bwrap wrote; at EOF stop watching.
    pub(super) fn read_bwrap_err(&mut self) {
        let Some(fd) = &self.bwrap_err else { return };
        let mut buf = [0u8; 4096];
        // Poll said readable, or the writer is gone (EOF).
        let n = match rustix::io::read(fd, &mut buf) {
            Ok(n) if n > 0 => n,
            _ => {
                self.bwrap_err = None;
                return;
            }
        };
        let text = &buf[..n];
        if self.init.is_some() {
            for line in String::from_utf8_lossy(text).lines() {
                crate::log::say!("snug: bwrap: {line}");
            }
        } else {
            self.bwrap_said.extend_from_slice(text);
        }
    }
}
