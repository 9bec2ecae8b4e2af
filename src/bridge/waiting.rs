//! Whether the sandbox terminal's foreground waits for input (SPEC T14): snug moves keys from
//! the caller's terminal to the pty only then, so that keys typed while the payload never
//! reads (typeahead during `snug -- sleep 2`, or right after its last output) stay in the
//! caller's terminal for the caller's shell, as they would without snug. A process waits when
//! it is blocked in a read or in a poll of any kind (`/proc/PID/syscall`, `proc(5)`); the
//! signal keys do not wait for that, the caller's terminal makes them (see
//! [`crate::tty::CallerTty::mirror`]).

/// System calls that wait for input (x86-64 and aarch64 numbers).
#[cfg(target_arch = "x86_64")]
const WAITS: [i64; 10] = [0, 7, 17, 19, 23, 232, 270, 271, 281, 441];
#[cfg(target_arch = "aarch64")]
const WAITS: [i64; 7] = [63, 65, 67, 22, 72, 73, 441];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WAITS: [i64; 0] = [];
/// Most processes of the foreground group looked at, from its leader down.
const MOST: usize = 64;

/// What a thread is doing: `Some(true)` blocked in a waiting call, `Some(false)` running or
/// in another call, `None` when it cannot be told (no permission, gone).
fn thread_waits(pid: u32, tid: &str) -> Option<bool> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall")).ok()?;
    let first = text.split_whitespace().next()?;
    Some(first.parse::<i64>().is_ok_and(|n| WAITS.contains(&n)))
}

/// Whether any thread of `pid` waits; `None` when none could be told.
fn process_waits(pid: u32) -> Option<bool> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut known = None;
    for t in tasks.flatten() {
        match thread_waits(pid, &t.file_name().to_string_lossy()) {
            Some(true) => return Some(true),
            Some(false) => known = Some(false),
            None => {}
        }
    }
    known
}

/// The process group of `pid` (`/proc/PID/stat`, field 5).
fn pgrp(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// Whether a process of group `group` (host pid of its leader) waits for input: the leader
/// first, then its descendants in the same group (`/proc/PID/task/TID/children`), at most
/// [`MOST`]. Unknown counts as waiting: snug then copies keys as they come.
pub fn foreground_waits(group: u32) -> bool {
    let mut todo = vec![group];
    let mut seen = 0;
    let mut told = false;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > MOST {
            break;
        }
        match process_waits(pid) {
            Some(true) => return true,
            Some(false) => told = true,
            None => {}
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { continue };
        for t in tasks.flatten() {
            let path = format!("/proc/{pid}/task/{}/children", t.file_name().to_string_lossy());
            let kids = std::fs::read_to_string(path).unwrap_or_default();
            todo.extend(
                kids.split_whitespace().filter_map(|k| k.parse::<u32>().ok()).filter(|k| pgrp(*k) == Some(group)),
            );
        }
    }
    !told
}

#[cfg(test)]
mod tests {
    use super::*;

    /// T14: a process blocked reading a pipe waits; one sleeping does not.
    #[test]
    fn t14_a_reader_waits_and_a_sleeper_does_not() {
        use std::process::{Command, Stdio};
        let mut reader = Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().expect("cat");
        let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_waits(reader.id()) != Some(true) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(process_waits(reader.id()), Some(true));
        while process_waits(sleeper.id()).is_none() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(process_waits(sleeper.id()), Some(false));
        let _ = reader.kill();
        let _ = sleeper.kill();
        let _ = reader.wait();
        let _ = sleeper.wait();
    }
}
