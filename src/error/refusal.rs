//! Why bwrap (or pasta) gave up, as a typed cause: the step its error line names and the
//! `errno` it ends with. bwrap's messages are fixed strings of `bubblewrap.c` followed by
//! `strerror(errno)`; bwrap runs with an empty environment, so in the C locale, and snug
//! reads the errno back by comparing with the C library's own table rather than by
//! matching words. Exit codes are then chosen from the cause (SPEC R4).

use super::{OS_ERROR, POLICY, UNAVAILABLE};
use rustix::io::Errno;

/// The step of sandbox set-up an error line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Building the policy's mount layout: `Can't mkdir`, `Can't create file at`, `Can't find
    /// source path`, or exec'ing init (`execvp`), which a mount over it hides.
    Layout,
    /// Entering the working directory (`Can't chdir`).
    Chdir,
    /// Anything else (namespaces, mounts of its own, seccomp).
    Other,
}

/// A parsed error line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// What bwrap was doing.
    pub step: Step,
    /// The `errno` the line ends with, when it ends with one.
    pub errno: Option<Errno>,
}

/// bwrap's message prefixes for each [`Step`] (`bubblewrap.c`).
const LAYOUT: [&str; 4] = ["Can't mkdir", "Can't create file at", "Can't find source path", "execvp "];
const CHDIR: &str = "Can't chdir";

/// The highest `errno` Linux defines (`EHWPOISON`, `errno(3)`).
const MAX_ERRNO: i32 = 133;

impl Refusal {
    /// Parse one line (without the `bwrap: ` prefix).
    pub fn parse(line: &str) -> Refusal {
        let step = if LAYOUT.iter().any(|m| line.starts_with(m)) {
            Step::Layout
        } else if line.starts_with(CHDIR) {
            Step::Chdir
        } else {
            Step::Other
        };
        Refusal { step, errno: errno_in(line) }
    }

    /// The exit code (SPEC R4): 71 for a run-time refusal (descriptors, processes or memory
    /// refused now, a directory that cannot be entered); with `setup`, 77 for a policy whose
    /// own mounts do not fit the host (a path to bind or mount over is missing); else 69, a
    /// host feature bwrap could not get.
    pub fn code(self, setup: bool) -> i32 {
        let run_time = [Errno::MFILE, Errno::NFILE, Errno::AGAIN, Errno::NOMEM];
        let missing = [Errno::NOENT, Errno::NOTDIR];
        match (self.step, self.errno) {
            (_, Some(e)) if run_time.contains(&e) => OS_ERROR,
            (Step::Chdir, _) => OS_ERROR,
            (Step::Layout, Some(e)) if setup && missing.contains(&e) => POLICY,
            _ => UNAVAILABLE,
        }
    }
}

/// The errno whose `strerror(3)` text is one of the line's `: `-separated parts (the last
/// one that is).
fn errno_in(line: &str) -> Option<Errno> {
    let parts: Vec<&str> = line.split(": ").map(str::trim).collect();
    parts
        .iter()
        .rev()
        .find_map(|part| (1..=MAX_ERRNO).find(|&n| text_of(n).eq_ignore_ascii_case(part)).map(Errno::from_raw_os_error))
}

/// The C library's text for `n`, without Rust's ` (os error N)`.
fn text_of(n: i32) -> String {
    let text = std::io::Error::from_raw_os_error(n).to_string();
    text.split(" (os error").next().unwrap_or(&text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// R4: exit codes from the parsed cause of bwrap's real messages (`bubblewrap.c` formats).
    /// Fails with the errno ignored: the EMFILE mount line gave 69, not 71.
    #[test]
    fn r4_bwrap_lines_parse_to_step_and_errno() {
        let r = Refusal::parse("Can't mkdir /nope/x: No such file or directory");
        assert_eq!(r, Refusal { step: Step::Layout, errno: Some(Errno::NOENT) });
        assert_eq!(r.code(true), POLICY);
        assert_eq!(r.code(false), UNAVAILABLE);
        let r = Refusal::parse("Can't find source path /srv/gone: Not a directory");
        assert_eq!(r.code(true), POLICY);
        assert_eq!(Refusal::parse("execvp /usr/libexec/snug: No such file or directory").code(true), POLICY);
        assert_eq!(Refusal::parse("Can't chdir to /root/x: Permission denied").code(true), OS_ERROR);
        let r = Refusal::parse("Failed to mount tmpfs: Too many open files");
        assert_eq!(r, Refusal { step: Step::Other, errno: Some(Errno::MFILE) });
        assert_eq!(r.code(true), OS_ERROR);
        assert_eq!(
            Refusal::parse("Creating new namespace failed: Resource temporarily unavailable").code(true),
            OS_ERROR
        );
        assert_eq!(Refusal::parse("Creating new namespace failed: Operation not permitted").code(true), UNAVAILABLE);
        assert_eq!(Refusal::parse("Can't mkdir /x: Permission denied").code(true), UNAVAILABLE);
        let r = Refusal::parse("No permissions to creating new namespace, likely because the kernel does not allow it");
        assert_eq!(r, Refusal { step: Step::Other, errno: None });
        assert_eq!(r.code(true), UNAVAILABLE);
    }
}
