//! From a policy to a running sandbox: find bwrap, seal snug's own signal state and start
//! nest before the policy is known ([`begin`]), build bwrap's options and what init needs
//! inside, hand them over, supervise, and report how it ended.

mod begun;
mod init_room;

pub use begun::{begin, Begun};

use crate::bwrap::{self, Launch};
use crate::channel::SECCOMP_FD;
use crate::error::{failure, UNAVAILABLE};
use crate::identity::Identity;
use crate::log::log;
use crate::mode::Mode;
use crate::policy::Policy;
use crate::report::RunRecord;
use crate::supervise::{OnInit, Outcome, SupervisorLoop};
use anyhow::{Context, Result};
use begun::Attempt;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// `bwrap` on `$PATH`.
///
/// # Errors
/// 69 naming the Debian package when it is missing (SPEC R4).
pub fn find_bwrap() -> Result<PathBuf> {
    bwrap::find_program("bwrap").ok_or_else(|| failure(UNAVAILABLE, bwrap::NO_BWRAP))
}

/// The shared objects mapped into snug right now (`/proc/self/maps`, `proc(5)`): exactly
/// what the same binary needs to run as init, so init starts even under `--no-defaults`
/// (no /usr). None for a static build (`make build`), which names no loader.
pub fn libraries() -> Vec<PathBuf> {
    let exe = std::fs::read_link("/proc/self/exe").ok();
    // The loader at the path the binary names (PT_INTERP), e.g. /lib64/ld-linux-x86-64.so.2;
    // maps shows it under its resolved name, which is not where the kernel will look.
    let Some(interp) = exe.as_deref().and_then(interpreter) else { return Vec::new() };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut libs: Vec<PathBuf> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| Some(p) != exe.as_ref())
        .collect();
    libs.sort();
    libs.dedup(); // a library has several mappings: one stat each is enough
    libs.retain(|p| p.is_file());
    libs.push(interp);
    libs.sort();
    libs.dedup();
    libs
}

/// The program interpreter an ELF64 file names (its `PT_INTERP` segment, `elf(5)`); `None`
/// for a static binary or anything unreadable.
fn interpreter(exe: &std::path::Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = vec![0u8; 8192];
    let n = std::fs::File::open(exe).ok()?.read(&mut head).ok()?;
    let head = &head[..n];
    let u16_at = |o: usize| Some(u16::from_le_bytes(head.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(head.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(head.get(o..o + 8)?.try_into().ok()?));
    if head.get(..5)? != b"\x7fELF\x02" {
        return None;
    }
    let (phoff, phentsize, phnum) = (u64_at(0x20)? as usize, u16_at(0x36)? as usize, u16_at(0x38)? as usize);
    (0..phnum).find_map(|i| {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? != 3 {
            return None; // not PT_INTERP
        }
        let (off, len) = (u64_at(ph + 8)? as usize, u64_at(ph + 32)? as usize);
        let raw = head.get(off..off + len)?;
        let path = std::str::from_utf8(raw.split(|b| *b == 0).next()?).ok()?;
        Some(PathBuf::from(path))
    })
}

/// The bwrap binary a run uses. A run, and `--dry-run`'s command line, take it to know
/// `--disable-userns` and `--bind-fd`; the run reads its file once nest has the binds'
/// descriptors ([`Bwrap::assumed_wrongly`]): before them, the scan of its ~70 KiB held
/// nest's exec of bwrap back by some 0.1 ms (SPEC B1), and no bwrap snug can run lacks
/// either (`--bind-fd` came in 0.11 and in Debian's 0.8.0-2+deb12u1, `--disable-userns` in
/// 0.8.0). `snug doctor` reads it ([`bwrap::known`]).
#[derive(Clone, Debug)]
pub struct Bwrap {
    /// Its path.
    pub path: PathBuf,
}

impl Bwrap {
    /// `bwrap` on `$PATH`.
    ///
    /// # Errors
    /// As [`find_bwrap`].
    pub fn find() -> Result<Bwrap> {
        Ok(Bwrap { path: find_bwrap()? })
    }

    /// The failure for a run whose bwrap lacks what it was taken to know ([`Bwrap`]), given
    /// what its file names ([`bwrap::known`]), whether the run binds descriptors, and bwrap's
    /// options: 69 naming what to install (SPEC P7, X2).
    pub fn assumed_wrongly(
        (disable_userns, bind_fd): (bool, bool),
        binds: bool,
        options: &[String],
    ) -> Option<anyhow::Error> {
        if binds && !bind_fd {
            return Some(failure(UNAVAILABLE, bwrap::NO_BIND_FD));
        }
        let asked = options.iter().any(|o| o == "--disable-userns");
        (asked && !disable_userns).then(|| failure(UNAVAILABLE, bwrap::NO_DISABLE_USERNS))
    }
}

/// What follows bwrap's options: `--`, init's path in the sandbox and its arguments (the
/// init flag, the mode and `--jobs`; CMD and the environment travel in a memfd, SPEC R7).
fn init_tail(mode: Mode, (jobs, identity): (snug_core::init::Jobs, Identity)) -> Vec<String> {
    let mut tail = vec!["--".to_string(), bwrap::INIT_PATH.to_string(), crate::init::FLAG.to_string()];
    tail.push(mode.word().to_string());
    if jobs != snug_core::init::Jobs::Kill {
        tail.push(jobs.word().to_string()); // SPEC L4: init outlives the main process
    }
    tail.extend(identity.init_word()); // SPEC P11: who the payload is
    tail
}

/// The bwrap command line for `policy` running `cmd` in `mode`; `runtime` is snug's runtime
/// directory for this run ([`crate::live::runtime::prepare`]), hidden inside (SPEC X4);
/// `opened`: the binds' descriptors ([`crate::grant_fd::open`]; none for `--dry-run`, which
/// shows the paths).
///
/// # Errors
/// 70 when snug cannot find its own executable; 77 when a bind would show what is inside
/// the runtime directory.
pub fn command_line(
    policy: &Policy,
    (mode, who): (Mode, (snug_core::init::Jobs, Identity)),
    runtime: Option<&std::path::Path>,
    found: &Bwrap,
    opened: &[crate::grant_fd::Opened],
) -> Result<Vec<String>> {
    let sources = crate::live::runtime::sources(policy);
    let near = |dir: &std::path::Path, prefix: &str| crate::live::runtime::near(&sources, dir, prefix);
    let mut masks = crate::live::runtime::masks(policy, &sources, &hidden(runtime, &near))?;
    init_room::make_room(policy, &mut masks)?;
    let launch = Launch {
        disable_userns: true, // as every bwrap a run can use ([`Bwrap`])
        bwrap: found.path.clone(),
        init_exe: std::env::current_exe().context("cannot find snug's own executable")?,
        init_libs: libraries(),
        seccomp_fd: Some(SECCOMP_FD),
        init_args: init_tail(mode, who)[2..].to_vec(),
        masks,
        chdir: crate::root::start_dir(&policy.target, &|p| policy.shows(p)),
        bind_fds: crate::grant_fd::numbers(policy.mounts.len(), opened, crate::sys::fds::GRANT_FD),
        identity: who.1,
    };
    Ok(bwrap::command_line(policy, &launch))
}

/// What no sandbox may see, whatever it binds (SPEC X4, P6): snug's runtime directories, and
/// its state directory once it exists (`snug allow` makes it), whose allow records a payload
/// could otherwise write for a `.snug.toml` it wrote too (with `--rw ~/.local`, or DIR =
/// `$HOME`). snug makes nothing on the host for it.
fn hidden(runtime: Option<&std::path::Path>, near: &dyn Fn(&std::path::Path, &str) -> bool) -> Vec<PathBuf> {
    let mut out = crate::live::runtime::hidden(runtime, near);
    let vars: Vec<(String, String)> =
        ["XDG_STATE_HOME", "HOME"].iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
    if let Some(state) = crate::project::state_dir(&vars) {
        out.extend(std::fs::canonicalize(&state));
    }
    out
}

/// What a run starts: bwrap's command line, the mode, the payload's argv and environment (they
/// reach init in a memfd, SPEC R7) and the bounds (K5).
pub struct Plan<'a> {
    /// bwrap's command line ([`command_line`]).
    pub argv: &'a [String],
    /// Terminal or detached, decided before the fork.
    pub mode: Mode,
    /// CMD and its arguments, raw bytes.
    pub cmd: &'a [OsString],
    /// The payload's environment; values of any bytes (R7).
    pub env: &'a [(String, OsString)],
    /// The process cap and memory bound.
    pub limits: &'a crate::bounds::Limits,
    /// The payload waits for snug's go before its exec: the network comes up first (N3).
    pub hold: bool,
    /// `--cow`: the overlay to mount at DIR in nest's namespaces before bwrap starts (W1).
    pub cow: Option<&'a crate::cow::Run>,
    /// The binds' descriptors, which nest hands bwrap (SPEC P7), and where init must find the
    /// mounts inside DIR ([`crate::grant_fd::verify::encode`]).
    pub grants: (&'a [crate::grant_fd::Opened], &'a [u8]),
}

/// Run `plan` in `begun`'s nest and supervise it to the end, filling `record`; `live` binds
/// the run's control socket, and says what `--jobs` asked (L1–L5). The socket is bound
/// before bwrap has its options: a name already taken ends the run there, the payload never
/// starts, and `snug ps` lists every run whose payload has started.
///
/// # Errors
/// snug's own failures before the sandbox runs (the outcome carries later ones).
pub fn run(
    plan: &Plan<'_>,
    begun: Begun,
    on_init: OnInit,
    record: &mut RunRecord,
    (bind, jobs): (impl FnOnce() -> Result<Option<crate::live::server::Server>>, snug_core::init::Jobs),
) -> Result<Outcome> {
    let Plan { argv, mode, cmd, env, limits, hold, cow, grants } = *plan;
    let Begun { signals, tty, pty, bwrap, tail, ignored, mut attempt } = begun;
    let Some(options) = argv.len().checked_sub(tail.len()).filter(|&at| argv[at..] == tail[..]).map(|at| &argv[1..at])
    else {
        return Err(failure(crate::error::INTERNAL, "bwrap's command line does not end with init's"));
    };
    if attempt.bounds.shape() != limits.shape() {
        // A profile asked for a bound (or user namespaces) the command line did not: nest
        // entered other cgroups than this run needs. Rare; it costs one more nest.
        log!("the policy needs other cgroups than the command line said: nest started again");
        attempt.abandon();
        attempt = Attempt::start(&bwrap, &tail, pty.as_ref(), tty.as_ref(), (limits.shape(), ignored))?;
        attempt.nest.set_program(std::path::Path::new(&argv[0]));
    }
    attempt.bounds.limit(limits, attempt.nest.pid1.host_pid)?;
    // A nest started again above has not had them ([`Begun::give_grants`] gave the first).
    let fds: Vec<_> = grants.0.iter().map(|o| o.fd.as_fd()).collect();
    attempt.nest.give_grants(&fds)?;
    attempt.nest.ready()?;
    // What this bwrap knows, read from its file now that nest has its descriptors and execs
    // it ([`Bwrap`]), and after nest's own failures, which say more (a bwrap that cannot be
    // exec'd at all); before bwrap has options: it is killed when this returns (SPEC P7).
    let knows = bwrap::known(std::path::Path::new(&argv[0]));
    if let Some(e) = Bwrap::assumed_wrongly(knows, !grants.0.is_empty(), options) {
        return Err(e);
    }
    let mut checks = grants.1.to_vec();
    if let Some(c) = cow {
        c.mount(attempt.nest.pid1.as_fd(), attempt.nest.pid1.host_pid)?;
        log!("--cow: the overlay is mounted on {}", c.dir.display());
        let inside = crate::cow::grants::expected(attempt.nest.pid1.host_pid, &c.dir, &c.inside)?;
        checks.extend(crate::grant_fd::verify::encode(&inside));
    }
    crate::payload_args::fill(&attempt.args, cmd, env, (hold, &checks))?;
    let control = bind()?;
    attempt.give_options(&with_console(options, pty.as_ref()));
    log!("mode: {}", mode.describe());
    let Attempt { nest, ours, .. } = attempt;
    let bridge = tty.zip(pty).map(|(mut tty, pty)| {
        tty.share(&crate::live::own_dir()); // one record for snugs sharing the terminal (T16)
        let mut bridge = crate::bridge::Bridge::new(tty, pty.master);
        bridge.led_by_init();
        // Deferred: init holds the pty's foreground from the start (T13).
        bridge.set_deferred(!matches!(mode, Mode::Terminal { immediate: true }));
        bridge
    });
    crate::bounds::sweep(); // while bwrap sets the sandbox up (SPEC B1)
    let name = cmd.first().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
    let (outcome, filled) = SupervisorLoop::new(mode, nest, ours, signals, name, on_init)
        .terminal(bridge)
        .live(control, jobs)
        .run(std::mem::take(record));
    *record = filled;
    Ok(outcome)
}

/// bwrap's command line with the sandbox's pty slave bound at `/dev/console` (T1): `tty(1)`,
/// `ttyname(3)` and `GPG_TTY=$(tty)` find a terminal by its path, and the slave's own node is
/// in the host's devpts, which bwrap's fresh `/dev/pts` does not show; ttyname's scan of
/// `/dev` then finds it there. bwrap binds it so itself only when fd 1 is the terminal.
fn with_console(options: &[String], pty: Option<&crate::pty::Pty>) -> Vec<String> {
    let mut out = options.to_vec();
    if let Some(path) = pty.and_then(|p| rustix::pty::ptsname(&p.master, Vec::new()).ok()) {
        out.extend(["--dev-bind".to_string(), path.to_string_lossy().into_owned(), "/dev/console".to_string()]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC P7, X2: a run took bwrap to know `--bind-fd` and `--disable-userns`; once its file
    /// is read, a bwrap without the first fails a run that binds descriptors (every run does),
    /// and one without the second a run that asked for it (not root's, which turns nested user
    /// namespaces off in nest). Each is 69 with what to install.
    #[test]
    fn p7_x2_a_bwrap_lacking_what_the_run_took_it_to_know_is_69() {
        let opts = |o: &[&str]| o.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let unavailable = |e: Option<anyhow::Error>| e.map(|e| (crate::error::code_of(&e), e.to_string()));
        assert!(Bwrap::assumed_wrongly((true, true), true, &opts(&["--disable-userns"])).is_none());
        let (code, text) = unavailable(Bwrap::assumed_wrongly((true, false), true, &opts(&[]))).unwrap();
        assert_eq!(code, UNAVAILABLE);
        assert!(text.contains("0.8.0-2+deb12u1"), "{text}");
        assert!(Bwrap::assumed_wrongly((true, false), false, &opts(&[])).is_none());
        let (code, text) =
            unavailable(Bwrap::assumed_wrongly((false, true), true, &opts(&["--disable-userns"]))).unwrap();
        assert_eq!(code, UNAVAILABLE);
        assert!(text.contains("--disable-userns"), "{text}");
        assert!(Bwrap::assumed_wrongly((false, true), true, &opts(&["--unshare-pid"])).is_none());
    }
}
