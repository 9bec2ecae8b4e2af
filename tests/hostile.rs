//! Hostile payloads and odd input. Arguments of any bytes and count (R7), closed
//! descriptors (R2), signals through descriptors (X3), hostile profile files (P4) and env
//! files (P5), exit categories (R4), bounds (K5) and grants (P7, P9), each as root and as the
//! unprivileged user.

mod args;
mod bounds;
mod cwd_link;
mod env_file;
mod exit_codes;
mod fown;
mod freeze;
mod grants;
mod limits;
mod profiles;
mod protect;
mod protect_git;
mod setid;
mod userns;
