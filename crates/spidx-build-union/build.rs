//! Empty on purpose: cargo resolves build-dependencies only for a package with a build script,
//! and this crate's build-dependencies carry the host-side feature union (see `Cargo.toml`).
fn main() {}
