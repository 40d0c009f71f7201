//! Records the git commit the CLI is built from (`SPIDX_GIT_COMMIT`, handed to
//! `spidx::experiment::db::export::set_git_commit` at start), so that every result and
//! report can name the code that produced it. A `SPIDX_GIT_COMMIT` in the build's
//! environment wins (the Dockerfile's build argument: the image is built from a copy
//! without `.git`); else `git rev-parse HEAD`; outside a git checkout (a source tarball, a
//! vendored copy) or without git, the commit is `unknown`. See `src/commit.rs`.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

#[path = "src/commit.rs"]
mod commit;

fn main() {
    println!("cargo:rerun-if-env-changed=SPIDX_GIT_COMMIT");
    let env = std::env::var("SPIDX_GIT_COMMIT").ok();
    let commit = match commit::choose(env.as_deref(), git(&["rev-parse", "HEAD"]).as_deref()) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    println!("cargo:rustc-env=SPIDX_GIT_COMMIT={commit}");
    // Build again when HEAD moves: HEAD itself (a branch switch or a detached checkout),
    // the branch it points to, and packed refs. Paths come from git, so this also works in
    // a worktree, whose .git is a file.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &w]) {
            let p = PathBuf::from(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/commit.rs");
}
