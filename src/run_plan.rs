//! A run's plan before anything starts: the policy resolved for it (SPEC P1–P10), the
//! `started` event (O9), and what `--dry-run` adds to bwrap's command line (O1).

use crate::report::RunRecord;
use crate::{bounds, cli, env_file, hints, host, log, mode, net, policy, prompt, protect, root};

/// The payload's policy, as resolved for this run (SPEC P1–P6), with what resolving needed.
pub(crate) struct Resolved {
    pub(crate) policy: policy::Policy,
    pub(crate) request: policy::Request,
    /// `-e NAME` values that are not text, passed as the caller's bytes (R7).
    pub(crate) raw_env: Vec<(String, std::ffi::OsString)>,
    pub(crate) net: Option<net::Net>,
    /// A network of snug's own (`--net-allow`, N5).
    pub(crate) own: Option<net::own::Own>,
    /// How DIR was chosen (P10), for `--dry-run`.
    pub(crate) root: root::Choice,
    /// The git-worktree hint, said only if the run fails (O11).
    pub(crate) worktree: Option<String>,
    /// Variables from `-e PATTERN` and `--env-file`, whose values `--dry-run` hides (P5).
    pub(crate) hidden: Vec<String>,
}

/// Profiles, the project's file and the grants into one policy, with the prompt's variables
/// and the directories a run creates; the network's plan (N4: pasta must exist before
/// anything starts; DNS may need another resolv.conf inside). `from_files` is
/// [`env_file::read_all`]'s, read earlier; its error counts here, after a missing bwrap (R4).
pub(crate) fn resolve(
    args: &cli::RunArgs,
    cmd: &[std::ffi::OsString],
    name: &str,
    record: &mut RunRecord,
    from_files: anyhow::Result<Vec<(String, String)>>,
) -> anyhow::Result<Resolved> {
    // `-e NAME` whose value is not text: resolution holds text, so the value is shown in
    // `--dry-run` as text and passed as the caller's bytes (R7).
    // P5: `-e 'AWS_*'` and `--env-file` as plain `-e` entries; their values stay out of --dry-run.
    let mut grants = args.grants.clone();
    let (env, hidden) = env_file::expand(&grants.env, from_files?, &host::host_env());
    grants.env = env;
    let raw_env = policy::raw_values(&grants);
    let mut request =
        policy::request_from_host(&args.profiles, args.no_defaults, args.dir.clone(), grants, !args.no_project);
    // P10: the project's root above the current directory is DIR, its `.snug.toml` applies.
    if args.dir.is_none() {
        if let Some(why) = root::planted_link(&request.host_env) {
            return Err(crate::error::failure(crate::error::POLICY, why));
        }
    }
    let root = root::choose(args.dir.is_some(), args.more.here, &request.host_env);
    request.dir = request.dir.take().or_else(|| root.dir());
    let mut policy = policy::resolve(&request)?;
    policy.allow_userns |= args.allow_userns;
    for (k, v) in &raw_env {
        let shown = v.to_string_lossy().into_owned();
        match policy.env.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = shown,
            None => policy.env.push((k.clone(), shown)),
        }
    }
    record.context().dir = Some(policy.target.clone());
    let visible = |p: &std::path::Path| policy.shows(p);
    let worktree = hints::git_worktree(&policy.target, &visible);
    let net = if policy.net { Some(net::Net::plan(&mut policy, args.dry_run)?) } else { None };
    let own = match net::own::allowed_for(&policy, &args.net_allow)? {
        Some(allowed) => Some(net::own::Own::plan(&mut policy, allowed, args.dry_run)?),
        None => None,
    };
    if args.default_shell() {
        // The shell's prompt says it is in a sandbox and which run (O8); a profile's own wins.
        let root = rustix::process::geteuid().is_root();
        for (k, v) in prompt::env_for(std::path::Path::new(&cmd[0]), name, root) {
            if !policy.env.iter().any(|(n, _)| *n == k) {
                policy.env.push((k, v));
            }
        }
    }
    if !args.dry_run {
        for note in policy::create_missing(&mut policy) {
            if !args.more.quiet {
                log::say!("snug: {note}");
            }
        }
    }
    Ok(Resolved { policy, request, raw_env, net, own, root, worktree, hidden })
}

/// Whether host path `p` lies in DIR or in a writable grant: where a payload could rewrite
/// an event stream (O9).
pub(crate) fn writable_inside(policy: &policy::Policy, p: &std::path::Path) -> bool {
    let rw = |m: &&policy::Mount| m.kind == policy::MountKind::Rw;
    p.starts_with(&policy.target)
        || policy.mounts.iter().filter(rw).any(|m| p.starts_with(m.src.as_deref().unwrap_or(&m.dest)))
}

/// The `started` event's fields (O9): the command, DIR, the run's name and mode, and the
/// policy (profiles, mounts, network, the names of the variables set, never their values).
pub(crate) fn run_started(
    record: &mut RunRecord,
    policy: &policy::Policy,
    mode: mode::Mode,
    name: &str,
) -> serde_json::Value {
    let env: Vec<&str> = policy.env.iter().map(|(k, _)| k.as_str()).collect();
    let ctx = record.context();
    serde_json::json!({
        "name": name,
        // As the report writes them (text, or base64 where not UTF-8), not serde's OsString.
        "argv": crate::quote::text::Texts(&ctx.argv),
        "command": crate::quote::text::Texts(&ctx.command),
        "dir": policy.target,
        "mode": mode.word(),
        "policy": { "profiles": policy.profiles, "mounts": policy.mounts, "net": policy.net, "env": env },
    })
}

/// The dry-run plan with the run's name (SPEC L1).
pub(crate) fn with_name(text: String, name: &str, json: bool) -> String {
    if !json {
        return text + &format!("name: {name}\n");
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    map.insert("name".into(), name.into());
    serde_json::to_string_pretty(&map).unwrap_or(text) + "\n"
}

/// The dry-run plan with the protected paths (SPEC P8, O1) appended.
pub(crate) fn with_protection(text: String, protection: &protect::Protection, json: bool) -> String {
    let (lines, value) = protect::dry_run(protection);
    if !json {
        return text + &lines;
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    map.insert("protected".into(), value);
    serde_json::to_string_pretty(&map).unwrap_or(text) + "\n"
}

/// The dry-run plan with how each bound is enforced (SPEC K5, O1) appended.
pub(crate) fn with_bounds(text: String, limits: &bounds::Limits, json: bool) -> String {
    let (lines, value) = bounds::plan_for_dry_run(limits);
    if !json {
        return text + &lines;
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str::<serde_json::Value>(&text) else {
        return text;
    };
    map.insert("bounds".into(), value);
    serde_json::to_string_pretty(&map).unwrap_or(text) + "\n"
}
