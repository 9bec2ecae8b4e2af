//! pty
