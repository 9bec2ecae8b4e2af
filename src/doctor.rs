//! `snug doctor` (SPEC O2): can this host run snug? Each check actually tries the thing
//! (a user namespace, a procfs mount, a pidfd group signal) rather than guessing from
//! versions, and names the Debian package to install when something is missing.

use std::fmt::Write as _;

use crate::bwrap::find_program;
use crate::error::UNAVAILABLE;
use probes::{fork_unshare_user, pasta_attach, pidfd, tiocsti, try_bwrap, tun, userns_sysctls, version};

mod probes;

/// Result of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    Missing,
    Warn,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Warn => "warn",
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    name: &'static str,
    status: Status,
    detail: String,
    /// snug cannot run at all unless this row is ok.
    required: bool,
}

fn row(name: &'static str, status: Status, detail: impl Into<String>, required: bool) -> Row {
    Row { name, status, detail: detail.into(), required }
}

/// Run every check, print the table on stdout, and return the exit code: 0 when snug can
/// run here (bwrap present; user namespace, procfs in a new pid namespace and pidfd_open
/// usable), [`UNAVAILABLE`] (69) otherwise.
pub fn run() -> i32 {
    let rows = checks();
    if crate::log::print(&table(&rows)).is_err() {
        return crate::error::INTERNAL;
    }
    verdict(&rows)
}

fn verdict(rows: &[Row]) -> i32 {
    if rows.iter().any(|r| r.required && r.status != Status::Ok) {
        UNAVAILABLE
    } else {
        0
    }
}

fn table(rows: &[Row]) -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let uid = rustix::process::getuid().as_raw();
    let mut out = format!("snug doctor: kernel {}, uid {uid}\n\n", release.trim());
    let _ = writeln!(out, "{:<26} {:<8} DETAIL", "CHECK", "STATUS");
    for r in rows {
        let _ = writeln!(out, "{:<26} {:<8} {}", r.name, r.status.word(), r.detail);
    }
    let failed: Vec<&str> = rows.iter().filter(|r| r.required && r.status != Status::Ok).map(|r| r.name).collect();
    if failed.is_empty() {
        out.push_str("\nsnug can run on this host.\n");
    } else {
        let _ = writeln!(out, "\nsnug cannot run on this host: {}.", failed.join(", "));
    }
    out
}

fn checks() -> Vec<Row> {
    let mut rows = Vec::new();
    let bwrap = find_program("bwrap");
    rows.push(match &bwrap {
        Some(p) => row("bwrap", Status::Ok, format!("{} ({})", p.display(), version(p)), true),
        None => row("bwrap", Status::Missing, "not in PATH: install the Debian package bubblewrap", true),
    });
    rows.push(nested_userns(bwrap.as_deref()));
    rows.push(bind_fd(bwrap.as_deref()));
    let kernel_userns = match fork_unshare_user() {
        Ok(()) => "unshare(CLONE_NEWUSER) works".to_string(),
        Err(e) => format!("unshare(CLONE_NEWUSER): {e}"),
    };
    rows.push(match &bwrap {
        Some(p) => match try_bwrap(p, &[]) {
            Ok(()) => {
                row("user namespaces", Status::Ok, format!("bwrap --unshare-user ran true; {kernel_userns}"), true)
            }
            Err(e) => {
                row("user namespaces", Status::Missing, format!("bwrap --unshare-user: {e}; {kernel_userns}"), true)
            }
        },
        None => row("user namespaces", Status::Missing, format!("needs bwrap; {kernel_userns}"), true),
    });
    rows.push(userns_sysctls());
    rows.push(match &bwrap {
        Some(p) => match try_bwrap(p, &["--proc", "/proc"]) {
            Ok(()) => row("proc in new pid namespace", Status::Ok, "bwrap --unshare-pid --proc /proc works", true),
            Err(e) => row("proc in new pid namespace", Status::Missing, format!("bwrap --proc /proc: {e}"), true),
        },
        None => row("proc in new pid namespace", Status::Missing, "needs bwrap", true),
    });
    let pasta = crate::net::find_pasta();
    rows.push(match &pasta {
        Some(p) => row("pasta", Status::Ok, format!("{} ({})", p.display(), version(p)), false),
        None => row("pasta", Status::Missing, "not in PATH: -p @net needs it; install the Debian package passt", false),
    });
    rows.push(tun());
    // The real attach runs snug itself: not from unit tests, whose executable is the harness.
    let exe = std::env::current_exe();
    rows.push(match (&pasta, &bwrap, exe) {
        (Some(_), Some(_), Ok(exe)) if !cfg!(test) => pasta_attach(&exe),
        (Some(_), Some(_), _) => row("pasta attach", Status::Warn, "not tried", false),
        _ => row("pasta attach", Status::Missing, "needs pasta and bwrap", false),
    });
    rows.extend(pidfd());
    rows.push(tiocsti(std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").ok().as_deref()));
    // SPEC K5: which mechanism holds each bound for this user on this host.
    let (procs, memory) = crate::bounds::plan();
    for (name, m) in [("process cap", procs), ("memory bound", memory)] {
        let status = if matches!(m, crate::bounds::Mechanism::Unavailable(_)) { Status::Warn } else { Status::Ok };
        rows.push(row(name, status, m.describe(), false));
    }
    let (works, renames, detail) = crate::cow::limits();
    let status = if !works {
        Status::Missing
    } else if renames {
        Status::Ok
    } else {
        Status::Warn
    };
    rows.push(row("--cow", status, detail, false));
    rows
}

/// SPEC X2: whether this bwrap can keep the payload from creating user namespaces.
fn nested_userns(bwrap: Option<&std::path::Path>) -> Row {
    let risk = crate::dryrun::USERNS_RISK;
    match bwrap {
        Some(p) if crate::bwrap::has_disable_userns(p) => row(
            "nested user namespaces",
            Status::Ok,
            format!("off in every sandbox (bwrap --disable-userns); --allow-userns turns them on, and then {risk}"),
            false,
        ),
        Some(_) => row(
            "nested user namespaces",
            Status::Warn,
            format!("this bwrap lacks --disable-userns: install bubblewrap 0.8.0 or later, else {risk}"),
            false,
        ),
        None => row("nested user namespaces", Status::Missing, "needs bwrap", false),
    }
}

/// SPEC P7: whether this bwrap binds what snug opened (`--bind-fd`, `--ro-bind-fd`); without
/// it no run starts.
fn bind_fd(bwrap: Option<&std::path::Path>) -> Row {
    match bwrap {
        Some(p) if crate::bwrap::has_bind_fd(p) => row(
            "bind descriptors",
            Status::Ok,
            "bwrap binds what snug opened (--bind-fd, --ro-bind-fd): no grant follows a planted symlink",
            true,
        ),
        Some(_) => row("bind descriptors", Status::Missing, crate::bwrap::NO_BIND_FD, true),
        None => row("bind descriptors", Status::Missing, "needs bwrap", true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o2_verdict_needs_every_required_row() {
        let ok = row("bwrap", Status::Ok, "x", true);
        let warn = row("pasta", Status::Missing, "install passt", false);
        assert_eq!(verdict(&[ok.clone(), warn.clone()]), 0);
        let bad = row("user namespaces", Status::Missing, "no", true);
        assert_eq!(verdict(&[ok, warn, bad.clone()]), UNAVAILABLE);
        let text = table(&[bad]);
        assert!(text.contains("snug cannot run on this host: user namespaces."), "{text}");
    }

    #[test]
    fn o2_tiocsti_rows() {
        assert_eq!(tiocsti(Some("0\n")).status, Status::Ok);
        assert_eq!(tiocsti(Some("1\n")).status, Status::Warn);
        assert!(tiocsti(None).detail.contains("kernel < 6.2"));
    }

    #[test]
    fn o2_checks_cover_every_row_and_name_packages() {
        let rows = checks();
        let names: Vec<&str> = rows.iter().map(|r| r.name).collect();
        for want in [
            "bwrap",
            "nested user namespaces",
            "bind descriptors",
            "user namespaces",
            "userns sysctls",
            "proc in new pid namespace",
            "pasta",
            "pasta attach",
            "/dev/net/tun",
            "pidfd_open",
            "pidfd group signals",
            "legacy_tiocsti",
            "--cow",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        for r in rows.iter().filter(|r| r.status == Status::Missing) {
            if r.name == "bwrap" {
                assert!(r.detail.contains("bubblewrap"));
            }
            if r.name == "pasta" {
                assert!(r.detail.contains("passt"));
            }
            if r.name == "bind descriptors" && r.detail != "needs bwrap" {
                assert!(r.detail.contains("0.8.0-2+deb12u1"));
            }
        }
    }
}
