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
    // Interpolated: index − scan is −2 at 8 and +1 at 12, zero at 8 + 4·2/3 = 10.7, not
    // the grid point 12.
    assert!(d.measured.contains("hdd: 10.7"), "{}", d.measured);
    // The same data against a range that holds 12 but not 10.7: outside.
    let f2 = finding(
        "test = \"crossover\"\na = { workload = \"index\" }\nb = { workload = \"scan\" }\npair_by = [\"device\"]\nalong = \"dims\"\nwithin = [\"device\"]\nrange = [11.0, 13.0]\n",
    );
    assert_eq!(decide_on(&f2, &o).verdict, Verdict::DirectionOnly);
    // No break-even: not reproduced.
    let cheap: Vec<Observation> = o
        .iter()
        .filter(|x| x.attrs["workload"] == "scan" || x.attrs["dims"] != "12")
        .cloned()
        .collect();
    assert_eq!(decide_on(&f, &cheap).verdict, Verdict::NotReproduced);
}

#[test]
fn best_counts_ties_and_majority() {
    let f = finding(
        "test = \"best\"\nselect = {}\nwithin = [\"index\"]\nover = [\"store\"]\nexpect = \"fast\"\n",
    );
    let mut o = vec![
        obs(&[("index", "r"), ("store", "fast")], "m", 0.0),
        obs(&[("index", "r"), ("store", "direct")], "m", 5.0),
    ];
    assert_eq!(decide_on(&f, &o).verdict, Verdict::Reproduced);
    // A plain run that ties at 0: the best is not FAST's alone.
    o.push(obs(&[("index", "r"), ("store", "direct")], "m", 0.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::NotReproduced, "{d:?}");
    assert!(d.measured.contains("direct = fast"), "{}", d.measured);
    // Majority: the paper's winner in 2 of 3 groups passes, in 1 of 2 does not.
    let f = finding(
        "test = \"best\"\nselect = {}\nwithin = [\"index\"]\nover = [\"page_size\"]\nexpect = \"4KB\"\nmajority = true\n",
    );
    let mut o = Vec::new();
    for (i, best) in [("a", "4KB"), ("b", "4KB"), ("c", "8KB")] {
        for ps in ["4KB", "8KB"] {
            let v = if ps == best { 1.0 } else { 2.0 };
            o.push(obs(&[("index", i), ("page_size", ps)], "m", v));
        }
    }
    assert_eq!(decide_on(&f, &o).verdict, Verdict::Reproduced);
    o.retain(|x| x.attrs["index"] != "b");
    assert_eq!(decide_on(&f, &o).verdict, Verdict::NotReproduced);
}

#[test]
fn ratio_direction_and_range() {
    let f = finding(
        "test = \"ratio\"\na = { device = \"ssd\" }\nb = { device = \"hdd\" }\npair_by = [\"k\"]\nrange = [5.0, 20.0]\n",
    );
    let pair = |k: &str, ssd: f64, hdd: f64| {
        [
            obs(&[("device", "ssd"), ("k", k)], "m", ssd),
            obs(&[("device", "hdd"), ("k", k)], "m", hdd),
        ]
    };
    let mut o: Vec<Observation> = pair("1", 1.0, 10.0).into();
    o.extend(pair("10", 2.0, 16.0));
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    assert!(d.measured.contains("8.00× … 10.00×"), "{}", d.measured);
    o.extend(pair("50", 4.0, 12.0));
    assert_eq!(decide_on(&f, &o).verdict, Verdict::DirectionOnly);
    o.extend(pair("100", 4.0, 4.0));
    assert_eq!(decide_on(&f, &o).verdict, Verdict::NotReproduced);
}

#[test]
fn trend_steps_and_differences() {
    let f = finding(
        "test = \"trend\"\na = {}\nalong = \"workload:k\"\nwithin = [\"device\"]\ndirection = \"increase\"\n",
    );
    let mut o = Vec::new();
    for (dev, vals) in [("hdd", [10.0, 20.0, 40.0]), ("ssd", [1.0, 2.0, 3.0])] {
        for (k, v) in [1, 10, 100].iter().zip(vals) {
            o.push(obs(
                &[
                    ("device", dev),
                    ("workload", &format!("knn k={k} streams=100")),
                ],
                "m",
                v,
            ));
        }
    }
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    // The difference hdd − ssd grows too (9, 18, 37).
    let fd = finding(
        "test = \"trend\"\na = { device = \"hdd\" }\nminus = { device = \"ssd\" }\npair_by = []\nalong = \"workload:k\"\nwithin = []\ndirection = \"increase\"\n",
    );
    assert_eq!(decide_on(&fd, &o).verdict, Verdict::Reproduced);
    // One step down on the SSD (k = 100 faster than k = 10): not reproduced, named.
    o[5].metrics.insert("m".into(), 1.5);
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::NotReproduced, "{d:?}");
    assert!(d.reason.contains("ssd 10 → 100"), "{}", d.reason);
}

#[test]
fn spread_compares_sensitivity() {
    let f = finding(
        "test = \"spread\"\na = { device = \"ssd\" }\nb = { device = \"hdd\" }\nrange_a = [1.5, 2.5]\nrange_b = [5.0, inf]\n",
    );
    let mut o = vec![
        obs(&[("device", "ssd"), ("page_size", "2KB")], "m", 20.0),
        obs(&[("device", "ssd"), ("page_size", "32KB")], "m", 10.0),
        obs(&[("device", "hdd"), ("page_size", "4KB")], "m", 2700.0),
        obs(&[("device", "hdd"), ("page_size", "64KB")], "m", 500.0),
    ];
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    o[2].metrics.insert("m".into(), 1500.0);
    assert_eq!(decide_on(&f, &o).verdict, Verdict::DirectionOnly);
    o[2].metrics.insert("m".into(), 900.0);
    assert_eq!(decide_on(&f, &o).verdict, Verdict::NotReproduced);
}

#[test]
fn most_often_and_crossover_shift() {
    let f = finding(
        "test = \"most-often\"\na = { store = \"fast\" }\nb = { store = \"direct\" }\npair_by = [\"page_size\"]\nalong = \"workload\"\ndirection = \"decrease\"\nexpect = \"w3\"\n",
    );
    let mut o = Vec::new();
    for (w, ps, fast) in [
        ("w1", "2KB", 11.0),
        ("w1", "4KB", 9.0),
        ("w3", "2KB", 9.0),
        ("w3", "4KB", 9.0),
    ] {
        o.push(obs(
            &[("store", "fast"), ("workload", w), ("page_size", ps)],
            "m",
            fast,
        ));
        o.push(obs(
            &[("store", "direct"), ("workload", w), ("page_size", ps)],
            "m",
            10.0,
        ));
    }
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    o[4].metrics.insert("m".into(), 12.0);
    assert_eq!(decide_on(&f, &o).verdict, Verdict::NotReproduced);

    let f = finding(
        "test = \"crossover-shift\"\na = { workload = \"index\" }\nb = { workload = \"scan\" }\npair_by = [\"device\"]\nalong = \"dims\"\nearlier = { device = \"hdd\" }\nlater = { device = \"ssd\" }\nrange = [3.0, 9.0]\n",
    );
    let mut o = Vec::new();
    // hdd: index − scan = −1 at 8, +1 at 12 → 10; ssd: −1 at 12, +1 at 20 → 16.
    for (dev, d, index) in [
        ("hdd", "8", 4.0),
        ("hdd", "12", 6.0),
        ("ssd", "12", 4.0),
        ("ssd", "20", 6.0),
    ] {
        o.push(obs(
            &[("device", dev), ("dims", d), ("workload", "index")],
            "m",
            index,
        ));
        o.push(obs(
            &[("device", dev), ("dims", d), ("workload", "scan")],
            "m",
            5.0,
        ));
    }
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::Reproduced, "{d:?}");
    assert!(d.measured.contains("+6.0"), "{}", d.measured);
    // The SSD's index only just cheaper at 12 (−0.1): break-even 12 + 8·0.1/1.1 = 12.7,
    // later by 2.7, outside 3 … 9.
    o[4].metrics.insert("m".into(), 4.9);
    let d = decide_on(&f, &o);
    assert_eq!(d.verdict, Verdict::DirectionOnly, "{d:?}");
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
    assert!(f.finding.len() >= 40, "{} findings", f.finding.len());
    for p in ["flashsim", "jidm", "efind", "emrich"] {
        assert!(f.finding.iter().any(|x| x.paper == p), "no finding of {p}");
    }
}
