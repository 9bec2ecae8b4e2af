//! `--dry-run` (SPEC O1): the mode, the policy and the exact command lines, as text a
//! person reads or as one JSON object; nothing is started.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::mode::Mode;
use crate::policy::{MountKind, Policy};
use crate::quote::{quote, quote_line};

/// Render the plan. `argv` is bwrap's command line ([`crate::bwrap::command_line`]);
/// `extra` are further named command lines (`("payload", argv)` as init receives it in its
/// memfd, SPEC R7; `("pasta", argv)`), shown after it. With
/// `json`, one JSON object with the keys `mode` ([`Mode::word`]), `profiles`, `mounts`,
/// `env`, `net`, `bwrap` and one key per `extra` name; it ends with a newline.
pub fn render(mode: Mode, policy: &Policy, argv: &[String], extra: &[(&str, Vec<String>)], json: bool) -> String {
    if json {
        render_json(mode, policy, argv, extra)
    } else {
        render_text(mode, policy, argv, extra)
    }
}

fn render_text(mode: Mode, policy: &Policy, argv: &[String], extra: &[(&str, Vec<String>)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "mode:     {}", mode.describe());
    let _ = writeln!(out, "profiles: {}", policy.profiles.join(" "));
    let _ = writeln!(out, "dir:      {}", quote(&policy.target.to_string_lossy()));
    let own = extra.iter().any(|(name, _)| *name == "net-allow");
    let net = match (policy.net, own) {
        (true, _) => "pasta (@net)",
        (false, true) => "snug's own: only what --net-allow names (below)",
        (false, false) => "none (loopback only)",
    };
    let _ = writeln!(out, "network:  {net}");
    let _ = writeln!(out, "userns:   {}", userns(policy, argv));
    out.push_str("mounts:\n");
    for m in policy.mounts.iter().chain(&policy.protected) {
        let dest = policy_path(&m.dest);
        let what = match (m.kind, &m.src) {
            (MountKind::Symlink, Some(t)) => format!("{dest} -> {}", policy_path(t)),
            (MountKind::Ro | MountKind::Rw, Some(src)) if *src != m.dest => {
                format!("{dest} (from {})", policy_path(src))
            }
            _ => dest,
        };
        let _ = writeln!(out, "  {:<8} {what:<40} {}", kind_word(m.kind), m.profile);
    }
    out.push_str("env (reaches init in a memfd, not on bwrap's command line):\n");
    for (k, v) in &policy.env {
        let _ = writeln!(out, "  {k}={}", quote(v));
    }
    out.push_str("bwrap, as snug runs it (--seccomp and /run/snug/init read descriptors only snug passes,\n");
    out.push_str("so pasted this line fails; each --bind and --ro-bind is a --bind-fd or --ro-bind-fd of\n");
    out.push_str("what snug opened at that path, through no symlink a sandbox could have planted):\n");
    let _ = writeln!(out, "  {}", quote_line(argv));
    let net = if policy.net { ", no network (pasta attaches only under snug)" } else { "" };
    let _ =
        writeln!(out, "by hand (the same sandbox without snug's seccomp filter and init{net}; runs pasted into sh):");
    let _ = writeln!(out, "  {}", quote_line(&by_hand(argv, &policy.env, payload_of(extra))));
    for (name, words) in extra {
        let note =
            if *name == "payload" { " (argv as init gets it in a memfd, not on bwrap's command line)" } else { "" };
        let _ = writeln!(out, "{name}{note}:\n  {}", quote_line(words));
    }
    out
}

/// What a payload run as the host's root risks with nested user namespaces (SPEC X2).
pub const USERNS_RISK: &str = "a payload running as the host's root gets capabilities in namespaces of its own: \
     it can mount filesystems (proc, tmpfs, FUSE) and write files the host's root owns there, and reach kernel \
     code open only to a namespace's owner (netfilter, mount options), where many local exploits start; \
     a cgroup namespace of its own stays refused, so no cgroupfs mount and no freezing of its own teardown, \
     and a sandbox nested inside cannot have one either (bwrap --unshare-cgroup fails there)";

/// The `userns:` line: off (bwrap's `--disable-userns` is on the command line), or allowed
/// and why, with what that risks.
fn userns(policy: &Policy, argv: &[String]) -> String {
    if argv.iter().any(|a| a == "--disable-userns") {
        return "disabled (bwrap --disable-userns; --allow-userns turns them on)".to_string();
    }
    if crate::identity::userns_denied(argv, policy.allow_userns) {
        // As root: nest's namespace, without bwrap's (SPEC P11).
        return "disabled (user.max_user_namespaces = 0 in the sandbox's user namespace; --allow-userns turns them on)"
            .to_string();
    }
    // Not denied: asked for (a run's bwrap always has `--disable-userns`, [`crate::launch::Bwrap`]).
    format!("allowed (--allow-userns or a profile's allow_userns); {USERNS_RISK}")
}

/// The payload's argv among `extra`.
fn payload_of<'a>(extra: &'a [(&str, Vec<String>)]) -> &'a [String] {
    extra.iter().find(|(name, _)| *name == "payload").map_or(&[], |(_, words)| words.as_slice())
}

fn render_json(mode: Mode, policy: &Policy, argv: &[String], extra: &[(&str, Vec<String>)]) -> String {
    let env: Map<String, Value> = policy.env.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    let mut obj = json!({
        "mode": mode.word(),
        "profiles": policy.profiles,
        "mounts": policy.mounts.iter().chain(&policy.protected).collect::<Vec<_>>(),
        "env": env,
        "net": policy.net,
        "userns": if crate::identity::userns_denied(argv, policy.allow_userns) { "disabled" } else { "allowed" },
        "bwrap": argv,
        "bwrap_by_hand": by_hand(argv, &policy.env, payload_of(extra)),
    });
    if let Value::Object(map) = &mut obj {
        for (name, words) in extra {
            // A name that collides with a fixed key would silently replace it: keep the key.
            map.entry(name.to_string()).or_insert_with(|| json!(words));
        }
    }
    // Serialising a Value built from strings, bools and arrays cannot fail.
    let mut text = serde_json::to_string_pretty(&obj).unwrap_or_default();
    text.push('\n');
    text
}

/// `argv` without what only snug can supply, so that it runs pasted into a shell: no
/// `--seccomp FD` (a descriptor snug fills), no init (it needs snug's channel on fds 3 and 4:
/// `--ro-bind SNUG /run/snug/init` and `--as-pid-1` go, `payload` follows `--` directly),
/// and the environment init would set as `--setenv` after `--clearenv` (SPEC R7 keeps both
/// off snug's own bwrap line).
pub fn by_hand(argv: &[String], env: &[(String, String)], payload: &[String]) -> Vec<String> {
    let mut env = Some(env);
    let init = crate::bwrap::INIT_PATH;
    let mut out = Vec::with_capacity(argv.len());
    let mut i = 0;
    while i < argv.len() {
        let w = argv[i].as_str();
        match w {
            "--as-pid-1" => i += 1,
            "--seccomp" => i += 2,
            // What init holds for itself to settle the payload's capabilities (SPEC P11):
            // without init the payload would keep it.
            "--cap-add" if argv.get(i + 1).is_some_and(|c| crate::identity::INIT_ONLY.contains(&c.as_str())) => i += 2,
            "--ro-bind" if argv.get(i + 2).is_some_and(|d| d == init) => i += 3,
            "--clearenv" => {
                out.push(w.to_string());
                for (k, v) in env.take().into_iter().flatten() {
                    out.extend(["--setenv".to_string(), k.clone(), v.clone()]);
                }
                i += 1;
            }
            "--" if argv.get(i + 1).is_some_and(|d| d == init) => {
                // `-- /run/snug/init --snug-init MODE` becomes `-- CMD…`.
                out.push("--".to_string());
                out.extend(payload.iter().cloned());
                return out;
            }
            _ => {
                out.push(w.to_string());
                i += 1;
            }
        }
    }
    out
}

fn kind_word(kind: MountKind) -> &'static str {
    match kind {
        MountKind::Ro => "ro",
        MountKind::Rw => "rw",
        MountKind::Tmpfs => "tmpfs",
        MountKind::Symlink => "symlink",
        MountKind::Dev => "dev",
        MountKind::Proc => "proc",
    }
}

fn policy_path(p: &std::path::Path) -> String {
    quote(&p.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bwrap::{command_line, golden};

    const TRICKY: [&str; 14] = [
        "plain",
        "",
        "two words",
        "it's",
        "''",
        "$HOME",
        "`id`",
        "a\nb",
        "*.rs",
        "~user",
        "#not-a-comment",
        "x=1",
        "back\\slash",
        "--flag=\"q\"",
    ];

    #[test]
    fn o1_quote_golden() {
        let table: String = TRICKY.iter().map(|w| format!("{:?} {}\n", w, quote(w))).collect();
        golden::check("shell-quote.txt", &table);
    }

    #[test]
    fn o1_quote_round_trips_through_sh() {
        let words: Vec<String> = TRICKY.iter().map(|w| w.to_string()).collect();
        let script = format!("printf '%s\\0' {}", quote_line(&words));
        let out = std::process::Command::new("/bin/sh").arg("-c").arg(&script).output().expect("run sh");
        let text = String::from_utf8(out.stdout).expect("utf8");
        let back: Vec<&str> = text.split_terminator('\0').collect();
        assert_eq!(back, TRICKY);
    }

    fn plan(profiles: &[&str], json: bool) -> String {
        let policy = golden::policy(&golden::request(profiles, false));
        let argv = command_line(&policy, &golden::launch());
        let pasta: Vec<String> = ["/usr/bin/pasta", "--config-net", "12345"].map(String::from).to_vec();
        let mut extra: Vec<(&str, Vec<String>)> = vec![("payload", vec!["sh".into(), "-c".into(), "echo 'hi'".into()])];
        if policy.net {
            extra.push(("pasta", pasta));
        }
        render(Mode::Terminal { immediate: true }, &policy, &argv, &extra, json)
    }

    #[test]
    fn o1_by_hand_drops_what_only_snug_supplies() {
        let policy = golden::policy(&golden::request(&[], false));
        let argv = command_line(&policy, &golden::launch());
        let payload: Vec<String> = ["sh", "-c", "echo 'hi there'"].map(String::from).to_vec();
        let hand = by_hand(&argv, &policy.env, &payload);
        assert!(!hand.iter().any(|a| a == "--seccomp" || a == "--as-pid-1" || a.starts_with("/run/snug")));
        let dd = hand.iter().position(|a| a == "--").expect("--");
        assert_eq!(hand[dd + 1..], payload[..]);
        assert_eq!(hand.len(), argv.len() - 3 - 2 - 1 - 3 + 3 * policy.env.len() + payload.len());
    }

    #[test]
    fn o1_text_golden() {
        golden::check("dryrun-defaults.txt", &plan(&[], false));
        golden::check("dryrun-net-dev.txt", &plan(&["@net", "dev"], false));
    }

    #[test]
    fn o1_json_golden_and_parses() {
        let text = plan(&["@net", "dev"], true);
        golden::check("dryrun-net-dev.json", &text);
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(v["mode"], "terminal-fg");
        assert_eq!(v["net"], true);
        assert_eq!(v["bwrap"][0], "/usr/bin/bwrap");
        assert_eq!(v["pasta"][0], "/usr/bin/pasta");
        assert_eq!(v["env"]["EDITOR"], "vi");
        assert!(v["mounts"].as_array().is_some_and(|m| m.iter().any(|m| m["kind"] == "tmpfs")));
    }
}
