//! R7 and R2: what the payload gets as arguments, environment and standard descriptors.

use crate::common::*;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(20);

/// R7: `seq 20000 | xargs snug -- sh -c 'echo $#' sh` prints what it prints without snug.
/// Positive control: before the args memfd, bwrap refused more than 9000 words (exit 69).
#[test]
fn r7_twenty_thousand_arguments_as_without_snug() {
    for who in everyone() {
        let dir = workdir(who);
        let snug = snug_for(who);
        let script = |with_snug: bool| {
            let front = if with_snug { format!("{} --", snug.display()) } else { String::new() };
            format!("seq 20000 | {}xargs {front} sh -c 'echo $#' sh", as_words(who))
        };
        let plain = run_bounded(Command::new("sh").arg("-c").arg(script(false)).current_dir(dir.path()), LIMIT);
        let o = run_bounded(Command::new("sh").arg("-c").arg(script(true)).current_dir(dir.path()), LIMIT);
        assert!(o.status.success(), "{who:?}: {:?} {}", o.status, o.err);
        assert_eq!(o.out, plain.out, "{who:?}");
        assert_eq!(o.out.trim(), "20000", "{who:?}");
    }
}

/// R7: an argument that is not UTF-8 reaches the payload byte for byte. Positive control:
/// fails without the fix: snug refused it with 64 (clap's UTF-8 check).
#[test]
fn r7_non_utf8_argument_byte_for_byte() {
    for who in everyone() {
        let dir = workdir(who);
        let arg = OsStr::from_bytes(b"\xff\xfe a\x01");
        let mut c = snug_cmd(who, dir.path(), &["--", "printf", "%s"]);
        c.arg(arg).stdout(Stdio::piped()).stderr(Stdio::piped());
        let o = c.output().expect("run snug");
        assert!(o.status.success(), "{who:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.stdout, arg.as_bytes(), "{who:?}");
    }
}

/// P5, R7: `-e NAME` whose value in snug's environment is not UTF-8 reaches the payload byte
/// for byte, never left out unsaid; a text value next to it still passes. Positive controls:
/// an older snug ran the payload with the variable missing and exited 0; the one before this
/// change refused it with 64.
#[test]
fn p5_env_value_that_is_not_text_is_passed_not_dropped() {
    for who in everyone() {
        let dir = workdir(who);
        let mut c = snug_cmd(who, dir.path(), &["-e", "BIN", "-e", "TXT", "--", "sh", "-c", "echo \"[$BIN][$TXT]\""]);
        c.env("BIN", OsStr::from_bytes(b"a\xffb")).env("TXT", "ok").stdout(Stdio::piped()).stderr(Stdio::piped());
        let o = c.output().expect("run snug");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{who:?}: {err}");
        assert_eq!(o.stdout, b"[a\xffb][ok]\n", "{who:?}");
        let mut c = snug_cmd(who, dir.path(), &["-e", "TXT", "--", "sh", "-c", "echo \"[$TXT]\""]);
        let o = c.env("TXT", "ok").output().expect("run snug");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "[ok]\n", "control: a text value passes");
    }
}

/// R7: a profile with thousands of env keys works: the environment travels to init over
/// the channel, not on bwrap's line as `--setenv K V`. Positive control: with the keys on
/// bwrap's line the run fails, over bwrap's 9000-word cap.
#[test]
fn r7_profile_with_thousands_of_env_keys() {
    for who in everyone() {
        let dir = workdir(who);
        let conf = dir.path().join("conf/snug/profiles.d");
        std::fs::create_dir_all(&conf).unwrap();
        let mut text = String::from("[env]\n");
        for i in 0..5000 {
            text.push_str(&format!("K{i} = \"v{i}\"\n"));
        }
        std::fs::write(conf.join("many.toml"), text).unwrap();
        chown_tree(who, dir.path());
        let mut c = snug_cmd(who, dir.path(), &["-p", "many", "--", "sh", "-c", "env | grep -c '^K'; echo $K4999"]);
        c.env("XDG_CONFIG_HOME", dir.path().join("conf"));
        let o = run_bounded(&mut c, LIMIT);
        assert!(o.status.success(), "{who:?}: {:?} {}", o.status, o.err);
        assert_eq!(o.out, "5000\nv4999\n", "{who:?}");
    }
}

/// Give `who` the files a test wrote below `dir`.
pub fn chown_tree(who: Who, dir: &std::path::Path) {
    if who == Who::User {
        let (uid, gid) = test_user();
        let st = Command::new("chown").arg("-R").arg(format!("{uid}:{gid}")).arg(dir).status().unwrap();
        assert!(st.success());
    }
}

/// R2: a stdout the caller closed is closed for the payload: its write fails, as without
/// snug. Positive control: the same command without snug (the expected output), and snug
/// before this change printed nothing on stderr and `ok` (Rust's runtime had reopened fd 1 on
/// /dev/null).
#[test]
fn r2_closed_stdout_stays_closed() {
    for who in everyone() {
        let dir = workdir(who);
        let script = |with_snug: bool| {
            let front =
                if with_snug { format!("{}{} -- ", as_words(who), snug_for(who).display()) } else { String::new() };
            format!("{front}sh -c 'echo x && echo ok >&2 || echo failed >&2' >&-")
        };
        for with_snug in [false, true] {
            let o = run_bounded(Command::new("sh").arg("-c").arg(script(with_snug)).current_dir(dir.path()), LIMIT);
            assert!(o.err.contains("failed") && !o.err.contains("ok"), "{who:?} snug={with_snug}: {}", o.err);
        }
        // stdin closed: the payload's read fails as well (on /dev/null, cat would succeed).
        let s = format!(
            "{}{} -- sh -c 'cat 2>/dev/null && echo open || echo closed' <&-",
            as_words(who),
            snug_for(who).display()
        );
        let o = run_bounded(Command::new("sh").arg("-c").arg(s).current_dir(dir.path()), LIMIT);
        assert_eq!(o.out.trim(), "closed", "{who:?}: {}", o.err);
    }
}
