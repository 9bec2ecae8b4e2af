//! The `-e` hint (SPEC P5, N1): the payload failed, and the caller's environment had proxy or
//! CA settings that the sandbox's clean environment left out.
//!
//! The heuristic, kept narrow so the hint stays quiet when it is not the likely cause; it is
//! said only when the payload's main process exited with a non-zero code by itself (not a
//! signal, not snug's own failure), and then:
//! - without a network (no `@net`): when the caller has a proxy variable (`https_proxy`…):
//!   the caller is on a network where downloads go through a proxy, so the failure is most
//!   likely the missing network, and `-p @net` brings it with the proxy and CA variables.
//!   CA variables alone say nothing (many machines set them to the system bundle).
//! - with `@net` (which passes [`crate::profiles::NET_VARS`]): when the caller has other
//!   variables whose names say proxy or CA bundle (`AWS_CA_BUNDLE`, `GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`…)
//!   that the payload did not get: `-e NAME` passes one.
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
    status: i32,
    caller: &[(String, String)],
    payload: &[(String, String)],
    net: bool,
) -> Option<String> {
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) == 0 {
        return None;
    }
    let dropped = |k: &str| !payload.iter().any(|(n, _)| n == k);
    let mut names: Vec<&str> = caller.iter().map(|(k, _)| k.as_str()).filter(|k| net_like(k) && dropped(k)).collect();
    names.sort_unstable();
    names.dedup();
    if !net {
        if !names.iter().any(|k| k.to_ascii_uppercase().ends_with("_PROXY")) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn env(names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), "v".to_string())).collect()
    }

    #[test]
    fn n1_dropped_proxy_hint_only_after_a_failure_with_a_dropped_net_var() {
        let caller = env(&["https_proxy", "SSL_CERT_FILE", "FOO"]);
        let failed = 1 << 8;
        let hint = dropped_env(failed, &caller, &[], false).expect("hint");
        assert!(
            hint.contains("SSL_CERT_FILE, https_proxy") && hint.contains("-p @net") && !hint.contains("FOO"),
            "{hint}"
        );
        assert_eq!(dropped_env(0, &caller, &[], false), None, "a success says nothing");
        assert_eq!(dropped_env(libc::SIGKILL, &caller, &[], false), None, "a signal is not a missing proxy");
        assert_eq!(dropped_env(failed, &env(&["SSL_CERT_FILE", "FOO"]), &[], false), None, "CA alone: quiet");
        assert_eq!(dropped_env(failed, &caller, &caller, true), None, "with @net all passed: quiet");
        let other = env(&["AWS_CA_BUNDLE", "https_proxy"]);
        let hint = dropped_env(failed, &other, &env(&["https_proxy"]), true).expect("hint");
        assert_eq!(hint, "hint: the sandbox left out AWS_CA_BUNDLE from your environment; -e NAME passes one");
    }
}
