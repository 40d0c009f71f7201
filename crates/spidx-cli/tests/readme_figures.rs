//! The README's measured figures come from `scripts/measure-readme`: every row of its
//! latest output (`docs/readme-figures.tsv`, one line per measured step) is quoted in the
//! README's table as the script wrote it, between the script's markers.

use std::path::Path;

#[test]
fn the_readme_quotes_the_latest_measurements() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let begin = readme
        .find("<!-- measure-readme: begin -->")
        .expect("README has the measure-readme begin marker");
    let end = readme
        .find("<!-- measure-readme: end -->")
        .expect("README has the measure-readme end marker");
    assert!(begin < end);
    let table: Vec<&str> = readme[begin..end].lines().collect();
    // Every data row carries the marker of its step, which the script replaces.
    for row in table.iter().skip(3).filter(|l| l.starts_with('|')) {
        assert!(
            row.contains("<!-- m:") && row.trim_end().ends_with("-->"),
            "a README row without its step marker: {row}"
        );
    }
    let figures = std::fs::read_to_string(root.join("docs/readme-figures.tsv"))
        .expect("docs/readme-figures.tsv (scripts/measure-readme's output)");
    let mut steps = Vec::new();
    for line in figures.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 9, "a line of 9 fields: {line}");
        let (step, row) = (f[0], f[8]);
        assert!(
            row.ends_with(&format!("<!-- m:{step} -->")),
            "row of {step}: {row}"
        );
        for (i, what) in [
            (1, "wall"),
            (2, "CPU"),
            (3, "disk"),
            (4, "RSS"),
            (5, "downloads"),
        ] {
            assert!(
                f[i].parse::<f64>().is_ok(),
                "{step}: {what} '{}' is a number",
                f[i]
            );
        }
        assert!(
            table.contains(&row),
            "README does not quote the latest measurement of {step}:\n{row}\n(run scripts/measure-readme {step}, or restore its row)"
        );
        assert!(!steps.contains(&step), "{step} twice");
        steps.push(step);
    }
    // A test binary's peak stays under 2 GB.
    for line in figures.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f[0].starts_with("rss:") || f[0] == "test-rss" {
            let kb: f64 = f[4].parse().unwrap();
            assert!(kb < 2.0 * 1024.0 * 1024.0, "{}: {kb} KB peak RSS", f[0]);
        }
    }
}
