//! How snug leaves (SPEC R3, R4): the [`End`] the core chose, in exit codes and words.

use super::{Outcome, SupervisorLoop};
use crate::error::{failure, INTERNAL, NOT_EXECUTABLE, NOT_FOUND};
use snug_core::supervisor::End;

impl SupervisorLoop {
    /// How snug ends, given what ended the run (`None`: nothing said).
    pub(super) fn outcome(&mut self, end: Option<End<anyhow::Error>>) -> Outcome {
        match end {
            Some(End::ExecFailed(snug_core::Errno(e))) => {
                let (code, what) = if e == libc::ENOENT {
                    (NOT_FOUND, crate::hints::not_found(&self.cmd))
                } else if e == libc::ELIBACC {
                    // As sh(1) says "required file not found": 127.
                    (NOT_FOUND, "its ELF interpreter (the dynamic loader) is not in the sandbox".to_string())
                } else {
                    (NOT_EXECUTABLE, crate::error::strerror(e))
                };
                Outcome::Fail(failure(code, format!("{}: {what}", self.cmd)))
            }
            Some(End::Payload(status)) => Outcome::Status(status),
            Some(End::Failed(e)) => Outcome::Fail(e),
            Some(End::TornDown(sig)) => Outcome::Signal(sig),
            None if self.init.is_none() => {
                let said = String::from_utf8_lossy(&self.bwrap_said);
                if said.trim().is_empty() {
                    if let Some(line) = crate::stack::too_small_for_bwrap() {
                        return Outcome::Fail(failure(crate::error::OS_ERROR, line));
                    }
                }
                let line =
                    said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("exited before the sandbox started");
                let line = line.strip_prefix("bwrap: ").unwrap_or(line);
                let code = crate::error::bwrap_setup_code(line);
                let hint =
                    if code == crate::error::POLICY { " (the policy's mounts do not fit: see --dry-run)" } else { "" };
                Outcome::Fail(failure(code, format!("bwrap: {line}{hint}")))
            }
            None => Outcome::Fail(failure(INTERNAL, "the sandbox ended without reporting the payload's status")),
        }
    }
}
