//! R6 on a kernel before 6.9, emulated on this one as sandlock does: under a seccomp filter
//! that makes `pidfd_send_signal(2)` with any flag fail with EINVAL (what a pre-6.9 kernel
//! answers to `PIDFD_SIGNAL_PROCESS_GROUP`), the terminal job-control row T5 (^Z, `fg`, `bg`)
//! passes as on a new kernel. snug needs no group pidfd signal at run time: it signals single
//! pinned processes without flags, and relays go through its init's `kill(-1)`.

use crate::common::{snug, Who};
use crate::pty::scripts;
use crate::terminal::jobs::t5_row;
use crate::terminal::{caller, parallel};
use std::process::Command;

/// T5 under the emulated pre-6.9 kernel, as root and as the test user. Positive control,
/// each run: `snug doctor` under the same filter reports the group signal failing with
/// EINVAL (without the filter this kernel, 6.9+, reports it working), so the filter is in
/// force for snug and what it starts.
#[test]
fn r6_t5_ctrl_z_fg_bg_without_pidfd_group_signals() {
    let filter_dir = tempfile::tempdir().expect("tempdir");
    let wrapper = filter_dir.path().join("pre-6.9.py");
    std::fs::write(&wrapper, scripts::PRE_6_9).expect("write the filter wrapper");
    let doctor = Command::new("python3").arg(&wrapper).arg(snug()).arg("doctor").output().expect("run doctor");
    let text = String::from_utf8_lossy(&doctor.stdout);
    let line = text.lines().find(|l| l.starts_with("pidfd group signals")).unwrap_or_default();
    assert!(line.contains("EINVAL"), "control: the filter did not make the group signal fail: {text}");
    let row = |who: Who| {
        let (mut t, dir) = caller(who, "R6 T5 ^Z before 6.9");
        // The caller's copy, readable by the test user.
        let local = dir.path().join("pre-6.9.py");
        std::fs::write(&local, scripts::PRE_6_9).expect("write the filter wrapper");
        let launcher = format!("python3 {} {} --", local.display(), snug().display());
        t5_row(&mut t, dir.path(), &launcher);
    };
    parallel(&row, &[]);
}
