//! N1, N3 and DNS in the lab: what `-p @net` reaches, on the first attempt, and what it
//! does not.

use std::time::Duration;

use crate::common::*;
use crate::net::lab::*;

const LIMIT: Duration = Duration::from_secs(20);

/// N1 + N3: from `snug -p @net`, a TCP server on the remote side is reachable by the
/// payload's very first connection (bash's /dev/tcp, its first command, no retry), over IPv4
/// and IPv6; a server bound only to the host's 127.0.0.1 is not, neither as 127.0.0.1 (the
/// sandbox's own loopback) nor through the gateway (no `--no-map-gw` would map it there).
/// Without `@net` none of them is reachable.
///
/// Positive control, in-test: pasta with its defaults (gateway mapped to the host's loopback,
/// ports forwarded) runs the same probes and does reach the loopback-only server, so the
/// probe can see the leak `@net` must not have. One-time mutation (see the report): with
/// snug's readiness wait removed, the first connection fails with "Network is unreachable".
#[test]
fn n1_n3_egress_first_attempt_and_no_host_loopback() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let Some(lab) = Lab::new(7) else { return };
    let py = python();
    let r4 = serve(std::process::Command::new(&py).args(["-c", SERVER_PY, &lab.remote4, "0", "remote4"]));
    let r6 = serve(std::process::Command::new(&py).args(["-c", SERVER_PY, &lab.remote6, "0", "remote6"]));
    let lo = loop {
        let p = serve(&mut lab.cmd(
            None,
            &[py.clone(), "-c".into(), SERVER_PY.into(), "127.0.0.1".into(), "0".into(), "host-loopback".into()],
        ));
        if p.port != r4.port && p.port != r6.port {
            break p;
        }
    };
    let (g4, g6) = (lab.remote4.as_str(), lab.remote6.as_str());
    let probes = [format!("{g6}:{}", r6.port), format!("127.0.0.1:{}", lo.port), format!("{g4}:{}", lo.port)];
    let first = format!(
        "timeout 5 bash -c 'exec 3<>/dev/tcp/{g4}/{} && read -r l <&3 && echo \"first $l\"' || exit 9; exec python3 -c \"$0\" {}",
        r4.port,
        probes.join(" ")
    );
    for who in everyone() {
        let dir = workdir(who);
        let mut args = vec!["-p", "@net", "--", "bash", "-c", &first, PROBE_PY];
        let (rc, out, err) = run(lab.cmd(None, &snug_words(who, &args)).current_dir(dir.path()), LIMIT);
        eprintln!("{who:?} @net:\n{out}{err}");
        assert_eq!(rc, 0, "{who:?}: {err}");
        assert!(out.contains("first hello remote4"), "{who:?}: first IPv4 connection failed:\n{out}");
        assert!(out.contains(&format!("{} ok hello remote6", probes[0])), "{who:?}: IPv6 egress:\n{out}");
        assert!(out.contains(&format!("{} fail", probes[1])), "{who:?}: host loopback reached:\n{out}");
        assert!(out.contains(&format!("{} fail", probes[2])), "{who:?}: host loopback via gateway:\n{out}");
        assert!(!out.contains("hello host-loopback"), "{who:?}: {out}");

        // Without @net: nothing but the sandbox's own loopback.
        let all = [format!("{g4}:{}", r4.port), probes[0].clone(), probes[1].clone(), probes[2].clone()];
        args = vec!["--", "python3", "-c", PROBE_PY];
        args.extend(all.iter().map(String::as_str));
        let (rc, out, err) = run(lab.cmd(None, &snug_words(who, &args)).current_dir(dir.path()), LIMIT);
        assert_eq!(rc, 0, "{who:?}: {err}");
        assert_eq!(out.matches(" fail ").count(), 4, "{who:?} without @net reached something:\n{out}");
    }

    // Control: pasta's defaults do leak the host's loopback (as root, in the lab).
    let mut control = vec![which("pasta"), "--config-net".into(), "--quiet".into(), "--foreground".into()];
    control.extend(["--runas".into(), "0:0".into(), "--".into(), py.clone()]);
    control.extend(["-c".into(), PROBE_PY.into(), probes[1].clone(), probes[2].clone()]);
    let (_, out, err) = run(&mut lab.cmd(None, &control), LIMIT);
    eprintln!("control (pasta defaults):\n{out}{err}");
    assert!(
        out.contains("ok hello host-loopback"),
        "control: pasta's defaults should reach the host's loopback:\n{out}{err}"
    );
}

/// N1, DNS: inside `@net` a name resolves through the host's resolver, whether that listens
/// on a routable address (the host's resolv.conf is used as it is) or on the host's loopback
/// (the sandbox gets a resolv.conf naming 169.254.1.1, which pasta forwards to it). The
/// resolvers are the test's own (a tiny UDP responder); the host's resolv.conf is replaced
/// in the lab command's own mount namespace. Control: without `@net` neither name resolves.
#[test]
fn n1_dns_resolves_through_the_hosts_resolver() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let Some(lab) = Lab::new(8) else { return };
    let py = python();
    let _remote = serve(std::process::Command::new(&py).args([
        "-c",
        DNS_PY,
        &lab.remote4,
        "53",
        "remote.snug.test",
        "203.0.113.77",
    ]));
    let words: Vec<String> =
        [&py, "-c", DNS_PY, "127.0.0.1", "53", "loop.snug.test", "203.0.113.78"].map(String::from).to_vec();
    let _local = serve(&mut lab.cmd(None, &words));
    let opts = "options timeout:2 attempts:1\n";
    for who in everyone() {
        let dir = workdir(who);
        let routable = file(dir.path(), "resolv-routable.conf", &format!("nameserver {}\n{opts}", lab.remote4));
        let looped = file(dir.path(), "resolv-loopback.conf", &format!("nameserver 127.0.0.1\n{opts}"));
        let cases = [(&routable, "remote.snug.test", "203.0.113.77"), (&looped, "loop.snug.test", "203.0.113.78")];
        for (resolv, name, want) in cases {
            let script = format!("grep nameserver /etc/resolv.conf; getent ahostsv4 {name}");
            let with = snug_words(who, &["-p", "@net", "--", "sh", "-c", &script]);
            let (rc, out, err) = run(lab.cmd(Some(resolv), &with).current_dir(dir.path()), LIMIT);
            eprintln!("{who:?} {name}:\n{out}{err}");
            assert_eq!(rc, 0, "{who:?} {name}: {out}{err}");
            assert!(out.lines().any(|l| l.starts_with(want)), "{who:?} {name}: {out}");
            if resolv == &looped {
                assert!(out.contains("nameserver 169.254.1.1"), "{who:?}: {out}");
            }
            let without = snug_words(who, &["--", "getent", "ahostsv4", name]);
            let (rc, out, _) = run(lab.cmd(Some(resolv), &without).current_dir(dir.path()), LIMIT);
            assert_ne!(rc, 0, "control: {name} resolved without @net: {out}");
        }
    }
}

/// From the payload's start: every IPv6 address of the sandbox that is still being probed
/// for duplicates (`tentative`, flag 0x40 in /proc/net/if_inet6), then one connection after
/// another to `HOST PORT` for `WINDOW` seconds, each given `EACH` seconds for its greeting;
/// a summary line `tried N lost M [when…]`.
const EARLY_PY: &str = r#"
import socket, sys, time
host, port, window, each = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
t0 = time.monotonic()
for line in open("/proc/net/if_inet6"):
    f = line.split()
    if int(f[4], 16) & 0x40:
        print("tentative", f[0], f[5], flush=True)
tried, lost = 0, []
while time.monotonic() - t0 < window:
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM); s.settimeout(each)
    at = time.monotonic() - t0
    try:
        s.connect((host, port)); got = s.recv(64).decode().strip()
        if not got.startswith("hello"):
            lost.append("%.2f:%r" % (at, got))
    except OSError as e:
        lost.append("%.2f:%s" % (at, e.strerror or type(e).__name__))
    tried += 1; s.close()
print("tried", tried, "lost", len(lost), lost, flush=True)
"#;

/// N3 + N1 over IPv6: when the payload starts, none of the sandbox's IPv6 addresses is still
/// being probed for duplicates, and no connection it makes in its first seconds is lost. The
/// remote side greets 100 ms after it accepts, the width of the window in which one frame of
/// the kernel's duplicate address detection (its probe and MLD reports, sent from `::` while
/// the link-local address is tentative) made the pasta in use send the greeting to `::`.
///
/// Fails without the fix (snug leaving `accept_dad` on): the link-local address is
/// `tentative` at the start (flags 0xc0) as root and as the user, and in 10 of 10 runs one
/// connection in the first 0.9 s never got its greeting ("lost 1 ['0.00:TimeoutError']").
#[test]
fn n3_ipv6_usable_at_start_no_early_connection_lost() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let Some(lab) = Lab::new(9) else { return };
    let py = python();
    let slow = serve(std::process::Command::new(&py).args(["-c", SERVER_PY, &lab.remote6, "0", "slow6", "0.1"]));
    let port = slow.port.to_string();
    for who in everyone() {
        let dir = workdir(who);
        let args = ["-p", "@net", "--", "python3", "-c", EARLY_PY, &lab.remote6, &port, "2.5", "3"];
        let (rc, out, err) = run(lab.cmd(None, &snug_words(who, &args)).current_dir(dir.path()), LIMIT);
        eprintln!("{who:?}:\n{out}{err}");
        assert_eq!(rc, 0, "{who:?}: {err}");
        assert!(!out.contains("tentative"), "{who:?}: an IPv6 address still tentative at the start:\n{out}");
        let summary = out.lines().find(|l| l.starts_with("tried ")).unwrap_or_default();
        let tried: usize = summary.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0);
        assert!(summary.contains(" lost 0 "), "{who:?}: a connection in the first seconds was lost: {summary}");
        assert!(tried >= 3, "{who:?}: too few connections to say anything: {out}");
    }
}

/// N3, the mechanism and its limit: inside `@net` IPv6 duplicate address detection is off
/// (`accept_dad` 0 in the sandbox's namespace, which its interface took when pasta made it).
/// Where snug cannot write that (here a `/proc/sys` bound read-only in the lab command's own
/// mount namespace, as root), the run goes on with detection on and `-v` says so.
///
/// Fails without the fix: the sandbox reads `accept_dad` 1 and `-v` says nothing about it.
#[test]
fn n3_accept_dad_off_in_the_sandbox_and_said_when_it_cannot_be() {
    if let Some(why) = skip_reason() {
        return eprintln!("skipped: {why}");
    }
    let Some(lab) = Lab::new(10) else { return };
    let read = ["-v", "-p", "@net", "--", "cat", "/proc/sys/net/ipv6/conf/default/accept_dad"];
    for who in everyone() {
        let dir = workdir(who);
        let (rc, out, err) = run(lab.cmd(None, &snug_words(who, &read)).current_dir(dir.path()), LIMIT);
        assert_eq!((rc, out.trim()), (0, "0"), "{who:?}: {err}");
        assert!(!err.contains("detection stays on"), "{who:?}: {err}");
    }
    let ro = "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec \"$@\"";
    let mut words: Vec<String> = ["sh", "-c", ro, "sh"].map(String::from).to_vec();
    words.extend(snug_words(Who::Root, &read));
    let (rc, out, err) = run(lab.cmd(None, &words).current_dir(workdir(Who::Root).path()), LIMIT);
    assert_eq!((rc, out.trim()), (0, "1"), "read-only /proc/sys: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("IPv6 duplicate address detection stays on")).collect();
    assert_eq!(said.len(), 1, "read-only /proc/sys, -v should say it once:\n{err}");
    assert!(said[0].contains("read-only file system"), "{}", said[0]);
}
