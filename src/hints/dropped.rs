//! The `-e` hint (SPEC P5, N1): the payload failed, and the caller's environment had proxy or
//! CA settings that the sandbox's clean environment left out.
//!
//! The heuristic, kept narrow so the hint stays quiet when it is not the likely cause; it is
//! said only when the payload's main process exited with a non-zero code by itself (not a
//! signal, not snug's own failure), and then:
//! - without a network (no `@net`): when the caller has a proxy variable (`https_proxy`…)
//!   and the command fetches ([`fetches`]: a URL among its words, or a downloader, package
//!   manager or build tool that downloads): the caller is on a network where downloads go
//!   through a proxy, so the failure is most likely the missing network, and `-p @net`
//!   brings it with the proxy and CA variables. A `make test` that fails says nothing
//!   (O11). CA variables alone say nothing (many machines set them to the system bundle).
//! - with `@net` (which passes [`crate::profiles::NET_VARS`]): when the caller has other
//!   proxy variables, or CA variables naming a bundle outside the system's trust stores
//!   (`AWS_CA_BUNDLE=/opt/corp/ca.pem`), that the payload did not get: `-e NAME` passes one.
//!   A CA variable set to the system bundle changes nothing inside, so it is not named.
//!
//! Any other dropped variable is not hinted at: most of a caller's environment is dropped on
//! purpose (P1), and naming it after every failure would be noise.

/// Whether variable `name` looks like a proxy or TLS trust setting.
fn net_like(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    up.ends_with("_PROXY")
        || ["CA_BUNDLE", "CA_CERTS", "CAINFO", "SSL_CERT", "SSL_ROOTS", "CA_FILE"].iter().any(|k| up.contains(k))
}

/// The hint line (without `snug: `) for a payload that ended with raw wait status `status`,
/// given the caller's and the payload's environments and whether the sandbox has a network;
/// or `None`.
pub fn dropped_env(
    status: snug_core::WaitStatus,
    caller: &[(String, String)],
    payload: &[(String, String)],
    net: bool,
    cmd: &[String],
) -> Option<String> {
    if !matches!(status, snug_core::WaitStatus::Exited(code) if code != 0) {
        return None;
    }
    let dropped = |k: &str| !payload.iter().any(|(n, _)| n == k);
    let proxy = |k: &str| k.to_ascii_uppercase().ends_with("_PROXY");
    let bears = |k: &str, v: &str| net_like(k) && dropped(k) && (proxy(k) || !net || custom_bundle(v));
    let mut names: Vec<&str> = caller.iter().filter(|(k, v)| bears(k, v)).map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    if !net {
        if !names.iter().any(|k| proxy(k)) || !fetches(cmd) {
            return None;
        }
        names.retain(|k| crate::profiles::NET_VARS.contains(k));
        return Some(format!(
            "hint: the sandbox has no network and left out {} from your environment; -p @net gives it the network and passes them",
            names.join(", ")
        ));
    }
    if names.is_empty() {
        return None;
    }
    Some(format!("hint: the sandbox left out {} from your environment; -e NAME passes one", names.join(", ")))
}

/// Whether a CA variable's value names a bundle other than the system's (which the sandbox
/// shows as the host does, so passing the variable would change nothing).
fn custom_bundle(value: &str) -> bool {
    const SYSTEM: [&str; 5] =
        ["/etc/ssl/", "/etc/pki/", "/usr/share/ca-certificates/", "/usr/lib/ssl/", "/usr/local/share/ca-certificates/"];
    !SYSTEM.iter().any(|s| value.starts_with(s))
}

/// Programs whose failure without a network is likely the network: they download.
const FETCHERS: [&str; 26] = [
    "curl", "wget", "git", "pip", "pip3", "uv", "poetry", "pipenv", "npm", "npx", "yarn", "pnpm", "bun", "cargo", "go",
    "gem", "bundle", "apt", "apt-get", "mvn", "gradle", "gradlew", "composer", "conda", "docker", "rustup",
];

/// Whether the payload's command (its words, and the words of a `sh -c` script) names a URL
/// or runs a program that downloads ([`FETCHERS`]).
fn fetches(cmd: &[String]) -> bool {
    let words = cmd.iter().flat_map(|a| a.split(|c: char| c.is_whitespace() || ";&|()'\"`".contains(c)));
    words.into_iter().any(|w| w.contains("://") || FETCHERS.contains(&w.rsplit('/').next().unwrap_or(w)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "v".to_string())).collect()
    }

    #[test]
    fn n1_dropped_proxy_hint_only_after_a_failure_with_a_dropped_net_var() {
        let caller = env(&["https_proxy", "SSL_CERT_FILE", "FOO"]);
        let failed = snug_core::WaitStatus::Exited(1);
        let pip: Vec<String> = ["sh", "-c", "pip install -r req.txt && pytest"].map(String::from).to_vec();
        let make: Vec<String> = ["make", "test"].map(String::from).to_vec();
        let hint = dropped_env(failed, &caller, &[], false, &pip).expect("hint");
        assert!(
            hint.contains("SSL_CERT_FILE, https_proxy") && hint.contains("-p @net") && !hint.contains("FOO"),
            "{hint}"
        );
        assert_eq!(
            dropped_env(snug_core::WaitStatus::Exited(0), &caller, &[], false, &pip),
            None,
            "a success says nothing"
        );
        assert_eq!(
            dropped_env(
                snug_core::WaitStatus::Signaled { sig: snug_core::Signal::KILL, core: false },
                &caller,
                &[],
                false,
                &pip
            ),
            None,
            "a signal is not a missing proxy"
        );
        assert_eq!(dropped_env(failed, &env(&["SSL_CERT_FILE", "FOO"]), &[], false, &pip), None, "CA alone: quiet");
        assert_eq!(dropped_env(failed, &caller, &caller, true, &pip), None, "with @net all passed: quiet");
        // O11: a failure of a command that does not fetch is not the proxy's.
        assert_eq!(dropped_env(failed, &caller, &[], false, &make), None, "make test: quiet");
        let url: Vec<String> = ["./get", "https://example.com/x"].map(String::from).to_vec();
        assert!(dropped_env(failed, &caller, &[], false, &url).is_some(), "a URL fetches");
        let other = env(&["AWS_CA_BUNDLE", "https_proxy"]);
        let hint = dropped_env(failed, &other, &env(&["https_proxy"]), true, &make).expect("hint");
        assert_eq!(hint, "hint: the sandbox left out AWS_CA_BUNDLE from your environment; -e NAME passes one");
        // O11: a CA variable naming the system bundle changes nothing inside: not named.
        let system = vec![("REQUESTS_CA_BUNDLE".to_string(), "/etc/ssl/certs/ca-certificates.crt".to_string())];
        assert_eq!(dropped_env(failed, &system, &[], true, &make), None, "system bundle: quiet");
    }
}
