//! Whether a process of the sandbox terminal's foreground group waits for input, for the
//! canonical-mode half of the key rule ([`super::keys`]): blocked reading a terminal, or in a
//! poll of any kind while it holds one (`/proc/PID/syscall`, `proc(5)`).

use snug_core::Pid;

/// System calls that read one descriptor, their first argument (x86-64 and aarch64 numbers):
/// waiting for input when that descriptor is a terminal.
#[cfg(target_arch = "x86_64")]
const READS: [i64; 3] = [0, 17, 19];
/// System calls that wait on several descriptors (poll, select, epoll): waiting for input
/// when the process holds a terminal at all (their sets are in its memory, not told here).
#[cfg(target_arch = "x86_64")]
const WAITS: [i64; 7] = [7, 23, 232, 270, 271, 281, 441];
#[cfg(target_arch = "aarch64")]
const READS: [i64; 3] = [63, 65, 67];
#[cfg(target_arch = "aarch64")]
const WAITS: [i64; 4] = [22, 72, 73, 441];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const READS: [i64; 0] = [];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WAITS: [i64; 0] = [];

/// Whether descriptor `fd` of `pid` is a terminal (`/proc/PID/fd/N` names a tty device).
fn is_terminal(pid: Pid, fd: u32) -> bool {
    let link = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap_or_default();
    let link = link.to_string_lossy();
    link.starts_with("/dev/pts/") || link.starts_with("/dev/tty") || link == "/dev/console"
}

/// Whether `pid` holds a terminal among its descriptors.
fn holds_terminal(pid: Pid) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return true };
    fds.flatten().filter_map(|f| f.file_name().to_str()?.parse().ok()).any(|fd| is_terminal(pid, fd))
}
/// Most sandbox processes looked at for one key: a bound on its cost.
const MOST: usize = 256;

/// The thread ids of `pid` (`/proc/PID/task`); `None` when it cannot be read (gone).
fn tasks(pid: Pid) -> Option<impl Iterator<Item = String>> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    Some(dir.flatten().map(|t| t.file_name().to_string_lossy().into_owned()))
}

/// The system call a thread of `pid` is blocked in and its first argument
/// (`/proc/PID/task/TID/syscall`, the argument in hex): the number is `None` while it runs;
/// `None` when the file cannot be read (no permission, gone).
fn thread_call(pid: Pid, tid: &str) -> Option<(Option<i64>, Option<u32>)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    let mut words = text.split_whitespace();
    let nr = words.next()?.parse::<i64>().ok();
    let first = words.next().and_then(|a| u32::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    Some((nr, first))
}

/// What a thread is doing: `Some(true)` blocked in a waiting call, `Some(false)` running or
/// in another call, `None` when it cannot be told (no permission, gone).
fn thread_waits(pid: Pid, tid: &str) -> Option<bool> {
    let (Some(nr), fd) = thread_call(pid, tid)? else { return Some(false) };
    if READS.contains(&nr) {
        return Some(fd.is_some_and(|fd| is_terminal(pid, fd)));
    }
    Some(WAITS.contains(&nr) && holds_terminal(pid))
}

/// Whether a thread of `pid` waits in `poll`, `select` or `epoll` while it holds a terminal.
fn process_polls(pid: Pid) -> bool {
    let polls = |tid: String| thread_call(pid, &tid).is_some_and(|(nr, _)| nr.is_some_and(|nr| WAITS.contains(&nr)));
    tasks(pid).is_some_and(|mut t| t.any(polls)) && holds_terminal(pid)
}

/// Whether any thread of `pid` waits; `None` when none could be told. A zombie does not
/// (its `/proc` files can no longer be read, which would count as "cannot tell").
fn process_waits(pid: Pid) -> Option<bool> {
    if zombie(pid) {
        return Some(false);
    }
    let mut known = None;
    for tid in tasks(pid)? {
        match thread_waits(pid, &tid) {
            Some(true) => return Some(true),
            Some(false) => known = Some(false),
            None => {}
        }
    }
    known
}

/// The process group of `pid` (`/proc/PID/stat`, field 5).
fn pgrp(pid: Pid) -> Option<Pid> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Pid::new(stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()?)
}

/// Whether a process group lives, for key after key (see [`Leader::lives`]). The group's
/// leader is held by a pidfd (`pidfd_open(2)`), readable once the leader has exited (a
/// zombie, or reaped), which a `poll(2)` with no timeout tells: two system calls that format
/// nothing, where opening and reading `/proc/PID/stat` cost each key nine (B8). `/proc` is
/// read only once the leader exited.
#[derive(Default)]
pub struct Leader {
    /// The group, and its leader's pidfd while the leader could be reached and was not seen
    /// reaped.
    held: Option<(Pid, Option<rustix::fd::OwnedFd>)>,
}

impl Leader {
    /// Whether process group `group` (a host pid) has a process at all (`kill(2)` with
    /// signal 0 to the group: ESRCH when it has none; EPERM means it has one snug may not
    /// signal). A group whose leader is a zombie (the payload just exited, init has not
    /// reaped it yet) counts as gone: the keys are the caller's shell's. The leader of a
    /// shell's pipeline is reaped by that shell at once, so its pager waits at most one
    /// recheck for its keys.
    pub fn lives(&mut self, group: Pid) -> bool {
        let Some(pid) = crate::sys::process::to_rustix(group) else { return false };
        if matches!(rustix::process::test_kill_process_group(pid), Err(rustix::io::Errno::SRCH)) {
            return false;
        }
        if !matches!(&self.held, Some((g, Some(_))) if *g == group) {
            // A leader that could not be reached (reaped) is asked for again: its number may
            // be a new group's leader's by now.
            let fd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
            self.held = Some((group, fd));
        }
        let Some((_, Some(fd))) = &self.held else { return true };
        if !crate::sys::poll::readable(fd, Some(std::time::Duration::ZERO)) {
            return true;
        }
        // Exited: a zombie (the group counts as gone) or reaped (the group lives while it has
        // a process, which `kill` said).
        if zombie(group) {
            return false;
        }
        self.held = Some((group, None));
        true
    }
}

/// `pid`'s state letter (`/proc/PID/stat`, field 3, after the command's closing paren);
/// `None` when it is gone.
fn state(pid: Pid) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().next()?.chars().next()
}

/// Whether `pid` is stopped (state T or t).
fn stopped(pid: Pid) -> bool {
    matches!(state(pid), Some('T' | 't'))
}

/// Whether `pid` is a zombie (state Z or X); false when it is gone.
fn zombie(pid: Pid) -> bool {
    matches!(state(pid), Some('Z' | 'X'))
}

/// The children of every thread of `pid` (`/proc/PID/task/TID/children`, `proc(5)`).
fn children(pid: Pid) -> Vec<Pid> {
    let mut out = Vec::new();
    for tid in tasks(pid).into_iter().flatten() {
        let kids = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")).unwrap_or_default();
        out.extend(kids.split_whitespace().filter_map(|k| Pid::new(k.parse().ok()?)));
    }
    out
}

/// Whether a process of the pty's session under its leader `session` (init, host pid), other
/// than the leader, waits for input; at most [`MOST`] looked at. Unlike [`group_waits`], one
/// that cannot be told does not count: this starts a hand-over, which a payload that does not
/// wait must not get.
pub fn session_waits(session: Pid) -> bool {
    let mut todo = vec![session];
    let mut seen = 0;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > MOST {
            break;
        }
        // A poll only: a read of its terminal from the pty's background stops the process
        // (SIGTTIN), and that stop hands the terminal over; counting the read too would hand
        // it over twice, and the second stop would then stop snug's job. So would a process
        // stopped there (its syscall file still names the read).
        if pid != session && !stopped(pid) && process_polls(pid) {
            return true;
        }
        todo.extend(children(pid));
    }
    false
}

/// Whether a process of group `group` waits for input: its leader first (the usual reader,
/// and the cheapest look), then every process of the pty's session under its leader
/// `session` (host pid) that is in the group, at most [`MOST`]. A group of which nothing
/// could be told (no permission) counts as waiting: snug then copies keys as they come.
pub fn group_waits(group: Pid, session: Option<Pid>) -> bool {
    let mut told = false;
    match process_waits(group) {
        Some(true) => return true,
        Some(false) => told = true,
        None => {}
    }
    let mut todo: Vec<Pid> = session.into_iter().collect();
    let mut seen = 0;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > MOST {
            break;
        }
        if pid != group && pgrp(pid) == Some(group) {
            match process_waits(pid) {
                Some(true) => return true,
                Some(false) => told = true,
                None => {}
            }
        }
        todo.extend(children(pid));
    }
    !told
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// The pid of a child the test started.
    fn pid_of(child: &std::process::Child) -> Pid {
        Pid(child.id() as i32)
    }

    /// What [`Leader::lives`] says, from `/proc` and `kill(2)` afresh each time.
    fn group_lives(group: Pid) -> bool {
        let Some(pid) = crate::sys::process::to_rustix(group) else { return false };
        !matches!(rustix::process::test_kill_process_group(pid), Err(rustix::io::Errno::SRCH)) && !zombie(group)
    }

    /// T15: a group with a process lives; the group of a child that was reaped does not.
    #[test]
    fn t15_a_group_lives_while_it_has_a_process() {
        let mut child = std::process::Command::new("true").process_group(0).spawn().expect("true");
        let group = pid_of(&child);
        let _ = child.wait();
        assert!(!Leader::default().lives(group));
        // A group of its own rather than the test's: in a pid namespace of its own (as `make
        // test` runs) the test's group leader lies outside and is not seen.
        let mut alive = std::process::Command::new("sleep").arg("5").process_group(0).spawn().expect("sleep");
        let lives = Leader::default().lives(pid_of(&alive));
        let _ = alive.kill();
        let _ = alive.wait();
        assert!(lives);
    }

    /// T15: the kept look at a group's leader agrees with `/proc` while the leader runs,
    /// once it is a zombie, once it is reaped, and for a group whose leader was reaped while
    /// another member stays. Without the look at `/proc` once the pidfd is readable, the
    /// zombie leader's group counted as living (the first assertion after the kill failed).
    #[test]
    fn t15_the_kept_look_at_a_leader_follows_its_life() {
        use std::process::Command;
        let mut leader = Command::new("sleep").arg("5").process_group(0).spawn().expect("sleep");
        let group = pid_of(&leader);
        let mut kept = Leader::default();
        assert!(kept.lives(group));
        assert!(kept.lives(group), "asked again through the open descriptor");
        let _ = leader.kill();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !zombie(group) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!kept.lives(group), "a zombie leader: the group counts as gone");
        let _ = leader.wait();
        assert!(!kept.lives(group), "a reaped leader, no member left");
        // A group whose leader is reaped while a member lives on: still a group.
        let mut lead = Command::new("sh");
        // The leader waits on its stdin until the first look, so that it is not a zombie yet.
        lead.args(["-c", "sleep 5 >/dev/null & echo $!; read x"]).process_group(0);
        let mut out =
            lead.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("sh");
        let group = pid_of(&out);
        let mut kept = Leader::default();
        assert!(kept.lives(group));
        drop(out.stdin.take()); // its read ends, and so does it
        let got = out.wait_with_output().expect("sh");
        let member: i32 = String::from_utf8_lossy(&got.stdout).trim().parse().expect("pid");
        assert!(kept.lives(group), "the member still runs in the group");
        assert!(group_lives(group));
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(member).expect("pid"),
            rustix::process::Signal::KILL,
        );
    }

    /// T14: a process blocked reading a terminal waits; one reading a pipe, or sleeping, does
    /// not.
    #[test]
    fn t14_a_terminal_reader_waits_and_a_pipe_reader_or_sleeper_does_not() {
        use std::process::{Command, Stdio};
        let Ok(pty) = rustix::pty::openpt(rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY) else {
            return;
        };
        let _ = rustix::pty::grantpt(&pty);
        let _ = rustix::pty::unlockpt(&pty);
        let slave =
            rustix::pty::ioctl_tiocgptpeer(&pty, rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY)
                .expect("slave");
        let mut piped = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().expect("cat");
        let mut reader = Command::new("cat").stdin(Stdio::from(slave)).stdout(Stdio::null()).spawn().expect("cat");
        let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_waits(pid_of(&reader)) != Some(true) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(process_waits(pid_of(&reader)), Some(true));
        let reading = |pid: Pid| {
            std::fs::read_to_string(format!("/proc/{pid}/syscall"))
                .is_ok_and(|s| s.split_whitespace().next() == Some("0"))
        };
        while !reading(pid_of(&piped)) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(reading(pid_of(&piped)), "cat blocks in read(2) of its pipe");
        assert_eq!(process_waits(pid_of(&piped)), Some(false), "a pipe reader does not wait for keys");
        while process_waits(pid_of(&sleeper)).is_none() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(process_waits(pid_of(&sleeper)), Some(false));
        let _ = reader.kill();
        let _ = piped.kill();
        let _ = piped.wait();
        let _ = sleeper.kill();
        let _ = reader.wait();
        let _ = sleeper.wait();
    }
}
