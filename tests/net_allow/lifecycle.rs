//! N8: the network lives and dies with the run. A SIGKILL of snug in the middle of a transfer
//! leaves no process and no connection; a connection the payload holds never delays snug's
//! end past G3's bound.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::net_allow::escape::give;
use crate::net_allow::lab::{file, which};
use crate::net_allow::own_lab::{OwnLab, HTTP_PY};

const HOSTS: &str = "203.0.113.1 pkgs.example\n";

/// The host namespace's established TCP connections to 203.0.113.1:80 (`ss(8)`).
fn connections(lab: &OwnLab) -> usize {
    let o = Command::new(which("ip"))
        .args(["netns", "exec", &lab.host, "ss", "-Htn", "state", "established", "dst", "203.0.113.1:80"])
        .output()
        .expect("ss");
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.trim().is_empty()).count()
}

/// N8: SIGKILL of snug while the payload downloads through it (a rate-limited curl): within
/// a second, no sandbox process is left and the host side holds no connection to the server.
/// Control: before the kill the same `ss` query sees snug's connection, so the check can see
/// one.
#[test]
fn n8_sigkill_mid_transfer_leaves_no_process_or_connection() {
    let Some(lab) = OwnLab::new(3, HOSTS) else { return };
    let _pkgs = lab.serve_remote(HTTP_PY, &["203.0.113.1", "80", "pkgs"]);
    for who in everyone() {
        let dir = workdir(who);
        give(who, dir.path());
        let mark = marker();
        let script = format!("curl -sS --limit-rate 200k -o /dev/null http://pkgs.example/big/1000000000 # {mark}");
        let mut cmd = lab.snug(who, dir.path(), &["--net-allow", "pkgs.example", "--", "sh", "-c", &script]);
        let mut child = spawn_own_group(cmd.stdout(std::process::Stdio::null()));
        assert!(until(Duration::from_secs(20), || connections(&lab) >= 1), "{who:?}: the transfer never started");
        assert!(!pids_with(&mark).is_empty(), "{who:?}: the payload is not running");
        kill(child.id(), libc::SIGKILL);
        let _ = child.wait();
        let gone = until(Duration::from_secs(1), || pids_with(&mark).is_empty() && connections(&lab) == 0);
        assert!(gone, "{who:?}: left {:?} and {} connections", pids_with(&mark), connections(&lab));
    }
}

/// N8 with G3: the payload holds a connection open through snug and ignores TERM; a TERM to
/// snug ends the run within G3's bound (1.1 s, with margin for a loaded machine): the held
/// connection does not keep snug. The connection is seen open (`ss`) before the signal.
#[test]
fn n8_held_connection_never_delays_the_end() {
    let Some(lab) = OwnLab::new(4, HOSTS) else { return };
    let _pkgs = lab.serve_remote(HTTP_PY, &["203.0.113.1", "80", "pkgs"]);
    for who in everyone() {
        let dir = workdir(who);
        let hold = "import socket, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n\
                    s = socket.create_connection(('pkgs.example', 80))\nprint('held', flush=True)\ntime.sleep(3600)\n";
        file(dir.path(), "hold.py", hold);
        give(who, dir.path());
        let mut cmd = lab.snug(who, dir.path(), &["--net-allow", "pkgs.example", "--", "python3", "hold.py"]);
        let mut child = spawn_own_group(cmd.stdout(std::process::Stdio::null()));
        assert!(until(Duration::from_secs(20), || connections(&lab) >= 1), "{who:?}: no connection held");
        let t = Instant::now();
        kill(child.id(), libc::SIGTERM);
        let ended = wait_bounded(&mut child, Duration::from_secs(5));
        let took = t.elapsed();
        kill_if_running(&mut child);
        assert!(ended.is_some() && took < Duration::from_millis(1600), "{who:?}: snug took {took:?}");
        assert!(until(Duration::from_secs(1), || connections(&lab) == 0), "{who:?}: a connection outlived snug");
    }
}
