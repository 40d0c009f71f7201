//! Which git commit a build records (shared by `build.rs`, which includes this file, and
//! its tests): `SPIDX_GIT_COMMIT` from the environment when set (the Docker image's build
//! argument: an image is built without `.git`), else what `git rev-parse HEAD` says, else
//! `unknown`. A set but malformed value is an error, never silently `unknown`.

/// The commit to record, from the environment's `SPIDX_GIT_COMMIT` (`env`) and git's
/// answer (`git`).
pub fn choose(env: Option<&str>, git: Option<&str>) -> Result<String, String> {
    let valid = |c: &str| (7..=64).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_hexdigit());
    match env.map(str::trim) {
        Some(c) if !c.is_empty() => {
            if valid(c) {
                Ok(c.to_ascii_lowercase())
            } else {
                Err(format!(
                    "SPIDX_GIT_COMMIT='{c}' is not a git commit (7 to 64 hex digits); give `--build-arg SPIDX_GIT_COMMIT=$(git rev-parse HEAD)`"
                ))
            }
        }
        _ => Ok(git
            .filter(|c| valid(c))
            .map_or_else(|| "unknown".to_string(), str::to_string)),
    }
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn the_build_argument_wins_and_a_bad_one_is_refused() {
        let head = "0123456789abcdef0123456789abcdef01234567";
        // The Docker build: no .git, the commit from the build argument.
        assert_eq!(choose(Some(head), None).unwrap(), head);
        assert_eq!(choose(Some(head), Some("fedcba9")).unwrap(), head);
        assert_eq!(
            choose(Some(&head.to_ascii_uppercase()), None).unwrap(),
            head
        );
        // A checkout: git's answer; neither: unknown.
        assert_eq!(choose(None, Some(head)).unwrap(), head);
        assert_eq!(choose(Some(""), Some(head)).unwrap(), head);
        assert_eq!(choose(None, None).unwrap(), "unknown");
        assert_eq!(choose(None, Some("not a hash")).unwrap(), "unknown");
        // Set but wrong (e.g. `$(git rev-parse HEAD)` run outside a checkout).
        let e = choose(Some("HEAD"), Some(head)).unwrap_err();
        assert!(e.contains("SPIDX_GIT_COMMIT='HEAD'"), "{e}");
    }
}
