//! What init reads of sandbox processes from its own `/proc` (`proc(5)`): groups, sessions
//! and the signal state of a group (T3). As the namespace's
//! pid 1, init sees exactly the sandbox's processes, under the numbers they see themselves.

/// The fields of `/proc/PID/stat` after the command name: state, ppid, pgrp, session, tty_nr.
fn stat_fields(pid: i32) -> Option<Vec<i64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().skip(1).take(4).filter_map(|f| f.parse().ok()).collect())
}

/// The process group of `pid`, from its stat line.
pub fn pgrp(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(1).map(|v| *v as i32)
}

/// The session of `pid`, from its stat line.
pub fn session(pid: i32) -> Option<i32> {
    stat_fields(pid)?.get(2).map(|v| *v as i32)
}

/// Every pid in this namespace but init's own.
pub fn pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()).filter(|p| *p != 1).collect()
}

/// Send `sig` to process group `pgrp` of this namespace; init's own group (id 1) is addressed
/// as "my group", since `kill(-1)` would mean every process (`kill(2)`).
pub fn signal_group(pgrp: i32, sig: i32) {
    let _ = crate::signals::kill(if pgrp == 1 { 0 } else { -pgrp }, sig);
}

/// Whether SIGINT reached no handler in the processes `pids`: each ignored or blocked it
/// (SPEC T3). A process with a handler answered; one with the default action died of it.
pub fn int_unanswered(pids: &[i32]) -> bool {
    let off = |s: &sigseal::SigState| {
        sigseal::SigState::has(s.ignored, libc::SIGINT) || sigseal::SigState::has(s.blocked, libc::SIGINT)
    };
    pids.iter().filter_map(|p| sigseal::SigState::of(*p).ok()).all(|s| off(&s))
}
