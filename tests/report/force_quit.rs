//! `force_quit` through a real terminal (SPEC O5, T3): two ^C within 1 s to a payload that
//! ignores SIGINT.

use crate::common::{marker, reap_leftovers, snug_for, workdir, Who};
use crate::pty::rows::in_front;
use crate::pty::{descendants, scripts, stat, Term, CTRL_C, PROMPT};
use crate::report::{each, ended_by};
use serde_json::Value;

fn report(t: &mut Term, path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| t.fail(&format!("report is not JSON ({e}): {text:?}")))
}

/// O5, T3: the report says `force_quit` and lists both ^C as delivered by the terminal (not
/// relayed by snug). Control: one ^C, then a TERM from a process: the ^C is listed the same
/// way, the run ends by the relayed TERM (`relayed_handled`: sh and sleep die of it), not by
/// a force-quit.
#[test]
fn o5_force_quit_through_a_terminal() {
    each(&|who: Who| {
        for twice in [true, false] {
            let dir = workdir(who);
            let mut t = Term::start(who, dir.path(), if twice { "O5 force_quit" } else { "O5 force_quit control" });
            let m = marker();
            let s = scripts::write(dir.path(), "ignint.sh", scripts::IGNORE_INT);
            let path = dir.path().join("r.json");
            // -v: snug's log on the terminal says when it has taken the first ^C.
            t.line(&format!("{} -v --report {} -- sh {s} {m}", snug_for(who).display(), path.display()));
            t.expect("ready");
            in_front(&mut t, &format!("sh {s} {m}"));
            t.send(CTRL_C);
            t.expect("^C reached no handler");
            if twice {
                t.send(CTRL_C);
            } else {
                // snug is the caller shell's only child (the test user's runs a copy of the
                // binary, which Term::snug_pid does not look for).
                let shell = t.shell_pid();
                let child = descendants(shell).into_iter().find(|p| stat(*p).is_some_and(|s| s.ppid == shell));
                let Some(snug) = child else { t.fail("no child of the caller's shell") };
                crate::common::kill(snug as u32, libc::SIGTERM);
            }
            t.expect(PROMPT);
            let rc = t.rc();
            reap_leftovers(&format!("sleep {m}"));
            let v = report(&mut t, &path);
            let ints: Vec<&Value> =
                v["signals"].as_array().into_iter().flatten().filter(|s| s["name"] == "INT").collect();
            for s in &ints {
                assert_eq!((s["origin"].as_str(), s["relayed"].as_bool()), (Some("terminal"), Some(false)), "{v}");
                assert_eq!(s["action"], "delivered_by_terminal", "{v}");
            }
            if twice {
                assert_eq!(rc, 130, "{who:?}: snug dies of SIGINT");
                assert_eq!(ended_by(&v), "force_quit", "{who:?}: {v}");
                assert_eq!(ints.len(), 2, "{v}");
                assert!(v["killed_at_end"].as_u64().is_some_and(|n| n >= 1), "{v}");
            } else {
                assert_eq!(rc, 128 + libc::SIGTERM, "{who:?} control");
                assert_eq!(ended_by(&v), "relayed_handled", "{who:?} control: {v}");
                assert_eq!(ints.len(), 1, "{v}");
            }
        }
    });
}
