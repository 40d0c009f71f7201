//! The scorecard's tests decide synthetic observations whose verdicts are known.

use super::*;

fn obs(attrs: &[(&str, &str)], metric: &str, v: f64) -> Observation {
    Observation {
        attrs: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        metrics: HashMap::from([(metric.to_string(), v)]),
    }
}

fn finding(text: &str) -> Finding {
    let f = Findings::parse(
        &format!(
            "[[finding]]\nid = \"x\"\npaper = \"p\"\nwhere = \"Fig. 1\"\nclaim = \"c\"\npaper_value = \"v\"\nexperiments = [\"e\"]\nmetric = \"m\"\n{text}"
        ),
        "findings.toml",
    )
    .unwrap();
    f.finding.into_iter().next().unwrap()
}

fn decide_on(f: &Finding, o: &[Observation]) -> Decision {
    let refs: Vec<&Observation> = o.iter().collect();
    evaluate(f, &refs).decision
}

const CHANGE: &str = r#"test = "change"
a = { store = "fast" }
b = { store = "direct" }
pair_by = ["page_size"]
direction = "decrease"
range = [-0.99, -0.98]
"#;

#[test]
fn change_reproduced_direction_only_and_not() {
    let f = finding(CHANGE);
    let pair = |ps: &str, fast: f64, plain: f64| {
        [
            obs(&[("store", "fast"), ("page_size", ps)], "m", fast),
            obs(&[("store", "direct"), ("page_size", ps)], "m", plain),
        ]
    };
    let mut o: Vec<Observation> = pair("2KB", 1.5, 100.0).into();
    o.extend(pair("4KB", 1.0, 100.0));
    assert_eq!(decide_on(&f, &o).verdict, Verdict::Reproduced);
    // −50 %: right way, far from −98 %.
    o.extend(pair("8KB", 50.0, 100.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::DirectionOnly, "{d:?}");
    assert!(d.measured.contains("3 pairs"), "{}", d.measured);
    // One pair the other way: not reproduced, and named.
    o.extend(pair("16KB", 120.0, 100.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::NotReproduced);
    assert!(d.reason.contains("1 of 4"), "{}", d.reason);
    // Unpaired runs only: not measured.
    let lone = [obs(&[("store", "fast"), ("page_size", "2KB")], "m", 1.0)];
    assert_eq!(decide_on(&f, &lone).verdict, Verdict::NotMeasured);
}

#[test]
fn zero_vs_positive() {
    let f = finding(
        "test = \"zero-vs-positive\"\nzero = { store = \"fast\" }\npositive = { store = \"direct\" }\n",
    );
    let mut o = vec![
        obs(&[("store", "fast")], "m", 0.0),
        obs(&[("store", "direct")], "m", 7.0),
    ];
    assert_eq!(decide_on(&f, &o).verdict, Verdict::Reproduced);
    o.push(obs(&[("store", "fast"), ("run", "r9")], "m", 3.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::NotReproduced);
    assert!(d.reason.contains("r9"), "{}", d.reason);
}

#[test]
fn best_per_group() {
    let f = finding(
        "test = \"best\"\nselect = {}\nwithin = [\"device\"]\nover = [\"page_size\"]\nexpect = \"4KB\"\n",
    );
    let mut o = vec![
        obs(&[("device", "ssd"), ("page_size", "2KB")], "m", 5.0),
        obs(&[("device", "ssd"), ("page_size", "4KB")], "m", 3.0),
        obs(&[("device", "hdd"), ("page_size", "4KB")], "m", 9.0),
        obs(&[("device", "hdd"), ("page_size", "8KB")], "m", 10.0),
    ];
    assert_eq!(decide_on(&f, &o).verdict, Verdict::Reproduced);
    o.push(obs(&[("device", "hdd"), ("page_size", "16KB")], "m", 1.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::NotReproduced);
    assert!(d.reason.contains("hdd: 16KB"), "{}", d.reason);
}

#[test]
fn ratio_grows_and_crossover() {
    let f = finding(
        "test = \"ratio-grows\"\na = { device = \"ssd\" }\nb = { device = \"hdd\" }\npair_by = []\nalong = \"workload\"\nrange = [5.0, 20.0]\n",
    );
    let o = vec![
        obs(
            &[("device", "ssd"), ("workload", "knn streams=1")],
            "m",
            1.0,
        ),
        obs(
            &[("device", "hdd"), ("workload", "knn streams=1")],
            "m",
            2.0,
        ),
        obs(
            &[("device", "ssd"), ("workload", "knn streams=100")],
            "m",
            1.0,
        ),
        obs(
            &[("device", "hdd"), ("workload", "knn streams=100")],
            "m",
            10.0,
        ),
    ];
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    let f = finding(
        "test = \"crossover\"\na = { workload = \"index\" }\nb = { workload = \"scan\" }\npair_by = [\"device\"]\nalong = \"dims\"\nwithin = [\"device\"]\nrange = [10.0, 12.0]\n",
    );
    let mut o = Vec::new();
    for (d, index, scan) in [("2", 1.0, 5.0), ("8", 3.0, 5.0), ("12", 6.0, 5.0)] {
        o.push(obs(
            &[("device", "hdd"), ("dims", d), ("workload", "index")],
            "m",
            index,
        ));
        o.push(obs(
            &[("device", "hdd"), ("dims", d), ("workload", "scan")],
            "m",
            scan,
        ));
    }
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    assert!(d.measured.contains("hdd: 12"), "{}", d.measured);
}

#[test]
fn findings_files_are_checked() {
    let bad = |extra: &str| {
        Findings::parse(
            &format!("[[finding]]\nid = \"x\"\npaper = \"p\"\nwhere = \"w\"\nclaim = \"c\"\npaper_value = \"v\"\nexperiments = [\"e\"]\nmetric = \"m\"\n{extra}"),
            "f.toml",
        )
        .unwrap_err()
        .to_string()
    };
    assert!(bad(&format!("{CHANGE}colour = 1\n")).contains("colour"));
    assert!(bad("test = \"best-of\"\n").contains("best-of"));
    assert!(bad(&CHANGE.replace("[-0.99, -0.98]", "[-0.98, -0.99]")).contains("not ordered"));
}

/// The shipped findings file parses, has unique ids and covers every paper.
#[test]
fn shipped_findings_parse() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seeds/findings.toml");
    let f = Findings::load(&path).unwrap();
    assert!(f.finding.len() >= 20, "{} findings", f.finding.len());
    for p in ["flashsim", "jidm", "efind", "emrich"] {
        assert!(f.finding.iter().any(|x| x.paper == p), "no finding of {p}");
    }
}
