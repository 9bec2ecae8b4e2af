//! Users by uid or by name (`passwd(5)`). The C library answers first: glibc through NSS, a
//! static musl build (`make build`) from `/etc/passwd` (and nscd). A user it does not know
//! may still come from LDAP, sssd or systemd-userdb, which only NSS reaches: then
//! `getent passwd` (glibc's, from the host's libc-bin) is asked, once per look-up that
//! missed, so such users lose nothing to the static build.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// One user's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The login name.
    pub name: String,
    /// The uid.
    pub uid: u32,
    /// The home directory.
    pub dir: PathBuf,
}

/// The entry of `uid` (`getpwuid_r(3)`, then `getent passwd UID`).
pub fn by_uid(uid: u32) -> Option<User> {
    let found = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten();
    found.map(from_nix).or_else(|| getent(&uid.to_string()))
}

/// The entry of login name `name` (`getpwnam_r(3)`, then `getent passwd NAME`).
pub fn by_name(name: &str) -> Option<User> {
    if name.is_empty() || name.contains([':', '\n', '\0']) {
        return None; // no passwd line can hold it
    }
    let found = nix::unistd::User::from_name(name).ok().flatten();
    found.map(from_nix).or_else(|| getent(name).filter(|u| u.name == name))
}

fn from_nix(u: nix::unistd::User) -> User {
    User { name: u.name, uid: u.uid.as_raw(), dir: u.dir }
}

/// `getent passwd -- KEY`: glibc's NSS look-up, by name or by uid.
fn getent(key: &str) -> Option<User> {
    let out =
        Command::new("getent").args(["passwd", "--", key]).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    parse(std::str::from_utf8(&out.stdout).ok()?.lines().next()?)
}

/// One `passwd(5)` line: `name:password:uid:gid:gecos:dir:shell`.
fn parse(line: &str) -> Option<User> {
    let fields: Vec<&str> = line.split(':').collect();
    if fields.len() != 7 || fields[0].is_empty() {
        return None;
    }
    Some(User { name: fields[0].to_string(), uid: fields[2].parse().ok()?, dir: PathBuf::from(fields[5]) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_passwd_lines_parse_and_malformed_ones_do_not() {
        let u = parse("ann:x:1234:100:Ann,,,:/home/ann:/bin/bash").expect("a passwd line");
        assert_eq!(u, User { name: "ann".into(), uid: 1234, dir: "/home/ann".into() });
        assert_eq!(parse("ann:x:12x:100::/home/ann:/bin/sh"), None);
        assert_eq!(parse("ann:x:1234:100:/home/ann:/bin/sh"), None, "six fields");
        assert_eq!(parse(":x:1:1::/:/bin/sh"), None);
    }

    #[test]
    fn l2_root_is_found_by_uid_and_by_name() {
        assert_eq!(by_uid(0).map(|u| u.name), Some("root".to_string()));
        assert_eq!(by_name("root").map(|u| u.uid), Some(0));
        assert_eq!(by_name("no-such-user-snug-test"), None);
        assert_eq!(by_name("root:x"), None);
        // The fallback itself, as a user only NSS knows would reach it.
        assert_eq!(getent("0").map(|u| u.name), Some("root".to_string()));
        assert_eq!(getent("root").map(|u| u.uid), Some(0));
    }
}
