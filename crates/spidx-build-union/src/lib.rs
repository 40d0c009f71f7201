//! Empty on purpose: this crate only unifies the features of the dependencies the CLI and the
//! Python module share (see its `Cargo.toml`).
