//! X3: no signal reaches a host process through a descriptor the payload inherits.

use crate::common::*;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A host process that owns the pipe's read end (`F_SETOWN` to itself, `fcntl(2)`), as a
/// program using signal-driven I/O would, and then sleeps; returns once it has done so.
fn owner(who: Who, dir: &std::path::Path, read_end: &OwnedFd) -> Child {
    let script = "fcntl(STDIN, 8, 0 + $$) or die \"F_SETOWN: $!\"; $| = 1; print \"owned\\n\"; sleep 60";
    let mut c = cmd_as(who, dir, "perl", &["-e", script]);
    c.stdin(read_end.try_clone().unwrap()).stdout(Stdio::piped()).process_group(0);
    let mut child = c.spawn().expect("spawn perl");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "owned\n");
    child
}

/// The payload: pick SIGKILL as the descriptor's signal, switch on O_ASYNC (numbers from
/// `asm-generic/fcntl.h`: F_SETSIG 10, F_GETFL 3, F_SETFL 4, O_ASYNC 0x2000), say so, then
/// wait for a line on stdin, whose arrival makes the kernel signal the owner.
const PAYLOAD: &str = "$| = 1; fcntl(STDIN, 10, 9); my $f = fcntl(STDIN, 3, 0); fcntl(STDIN, 4, $f | 0x2000); \
    print \"armed\\n\"; my $l = <STDIN>; print \"done\\n\"";

/// Run `launcher` with the pipe's read end as stdin; true when the owner was killed.
fn owner_killed(who: Who, dir: &std::path::Path, mut launcher: Command) -> bool {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe2");
    let mut own = owner(who, dir, &r);
    launcher.stdin(r).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
    let mut payload = launcher.spawn().expect("spawn payload");
    let mut out = BufReader::new(payload.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "armed\n", "{who:?}");
    std::fs::File::from(w).write_all(b"go\n").unwrap(); // the kernel signals the owner here
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(wait_bounded(&mut payload, Duration::from_secs(10)).is_some_and(|s| s.success()), "{who:?}");
    // The signal was sent during the write above; give its delivery a bound to show.
    let killed = until(Duration::from_millis(500), || own.try_wait().ok().flatten().is_some());
    if !killed {
        let _ = own.kill();
    }
    let st = own.wait().unwrap();
    killed && std::os::unix::process::ExitStatusExt::signal(&st) == Some(libc::SIGKILL)
}

/// X3: F_SETSIG=SIGKILL + O_ASYNC on an inherited descriptor whose owner is a host process
/// leaves that process alive under snug. Positive control in-test: the same payload under
/// plain bwrap (no filter of snug's) kills it.
#[test]
fn x3_descriptor_cannot_signal_a_host_process() {
    for who in everyone() {
        let dir = workdir(who);
        let control = plain_bwrap(who, dir.path(), true, &["perl", "-e", PAYLOAD]);
        assert!(owner_killed(who, dir.path(), control), "{who:?}: control: plain bwrap should let the payload kill");
        let snug = snug_cmd(who, dir.path(), &["--", "perl", "-e", PAYLOAD]);
        assert!(!owner_killed(who, dir.path(), snug), "{who:?}: a signal reached a host process through a descriptor");
    }
}
