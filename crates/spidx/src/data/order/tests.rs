use super::*;
use crate::data::generate::{generate, Distribution, GenerateOptions};
use proptest::prelude::*;

fn data(d: Distribution, n: u64, seed: u64) -> Dataset {
    let mut o = GenerateOptions::new(d, n);
    o.seed = seed;
    generate(&o).unwrap()
}

fn all_orders(seed: u64, window: usize) -> Vec<InsertionOrder> {
    vec![
        InsertionOrder::AsStored,
        InsertionOrder::Shuffled { seed },
        InsertionOrder::Hilbert,
        InsertionOrder::X,
        InsertionOrder::Clustered { window, seed },
    ]
}

fn centres(ds: &Dataset) -> Vec<(f64, f64)> {
    ds.as_geo()
        .unwrap()
        .iter()
        .map(|r| {
            (
                (r.bbox.min().x + r.bbox.max().x) / 2.0,
                (r.bbox.min().y + r.bbox.max().y) / 2.0,
            )
        })
        .collect()
}

/// Mean distance between the centres of consecutively inserted objects.
fn mean_step(ds: &Dataset) -> f64 {
    let c = centres(ds);
    let total: f64 = c
        .windows(2)
        .map(|w| ((w[0].0 - w[1].0).powi(2) + (w[0].1 - w[1].1).powi(2)).sqrt())
        .sum();
    total / (c.len() - 1) as f64
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Every order is a permutation of the input: the same objects (ids and geometries),
    /// each once.
    #[test]
    fn every_order_is_a_permutation(
        n in 1u64..400,
        seed in 0u64..1000,
        window in 1usize..50,
        dist in 0usize..4,
    ) {
        let ds = data(Distribution::ALL[dist], n, seed);
        for order in all_orders(seed, window) {
            let perm = order.permutation(&ds).unwrap();
            let mut sorted = perm.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n as usize).collect::<Vec<_>>(), "{}", order);
            let mut re = ds.clone();
            order.apply(&mut re).unwrap();
            let (a, b) = (ds.as_geo().unwrap(), re.as_geo().unwrap());
            for (pos, &i) in perm.iter().enumerate() {
                prop_assert_eq!(&b[pos], &a[i], "{}", order);
            }
        }
    }

    /// Vectors too (any dimensionality the index supports).
    #[test]
    fn every_order_permutes_vectors(n in 1u64..200, seed in 0u64..1000, dims in prop::sample::select(vec![2usize, 3, 10, 32])) {
        let mut o = GenerateOptions::new(Distribution::Uniform, n);
        o.dims = dims;
        o.vectors = true;
        o.seed = seed;
        let ds = generate(&o).unwrap();
        for order in all_orders(seed, 7) {
            let mut re = ds.clone();
            order.apply(&mut re).unwrap();
            let perm = order.permutation(&ds).unwrap();
            let (a, b) = (ds.as_vectors().unwrap(), re.as_vectors().unwrap());
            prop_assert_eq!(b.len(), a.len());
            for (pos, &i) in perm.iter().enumerate() {
                prop_assert_eq!(b.row(pos), a.row(i), "{}", order);
            }
        }
    }
}

#[test]
fn deterministic_per_seed() {
    let ds = data(Distribution::Buildings, 2000, 1);
    for order in all_orders(5, 100) {
        assert_eq!(
            order.permutation(&ds).unwrap(),
            order.permutation(&ds).unwrap(),
            "{order}"
        );
    }
    let shuffled = |seed| InsertionOrder::Shuffled { seed }.permutation(&ds).unwrap();
    assert_ne!(shuffled(5), shuffled(6));
    let clustered = |seed| {
        InsertionOrder::Clustered { window: 100, seed }
            .permutation(&ds)
            .unwrap()
    };
    assert_ne!(clustered(5), clustered(6));
    assert_eq!(
        InsertionOrder::AsStored.permutation(&ds).unwrap(),
        (0..2000).collect::<Vec<_>>()
    );
}

#[test]
fn sorted_orders_are_sorted() {
    let mut ds = data(Distribution::Uniform, 3000, 3);
    InsertionOrder::X.apply(&mut ds).unwrap();
    let c = centres(&ds);
    assert!(c.windows(2).all(|w| w[0].0 <= w[1].0));

    let mut ds = data(Distribution::Uniform, 3000, 3);
    InsertionOrder::Hilbert.apply(&mut ds).unwrap();
    let keys = hilbert_keys(&ds).unwrap();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
}

/// Clustered: each window holds the same objects as the same window of the Hilbert order
/// (so its runs are spatially local), in a shuffled order inside.
#[test]
fn clustered_windows_are_hilbert_windows_shuffled() {
    let ds = data(Distribution::Buildings, 5000, 9);
    let hilbert = InsertionOrder::Hilbert.permutation(&ds).unwrap();
    let window = 256;
    let clustered = InsertionOrder::Clustered { window, seed: 1 }
        .permutation(&ds)
        .unwrap();
    let mut some_reordered = false;
    for (h, c) in hilbert.chunks(window).zip(clustered.chunks(window)) {
        let (mut hs, mut cs) = (h.to_vec(), c.to_vec());
        some_reordered |= h != c;
        hs.sort_unstable();
        cs.sort_unstable();
        assert_eq!(hs, cs);
    }
    assert!(some_reordered);
}

/// The measure of locality: consecutive insertions are close in the spatial orders and far
/// in the random ones.
#[test]
fn clustered_is_spatially_local() {
    let stored = data(Distribution::Buildings, 20_000, 4);
    let step = |order: InsertionOrder| {
        let mut ds = stored.clone();
        order.apply(&mut ds).unwrap();
        mean_step(&ds)
    };
    let shuffled = step(InsertionOrder::Shuffled { seed: 1 });
    let as_stored = step(InsertionOrder::AsStored);
    let hilbert = step(InsertionOrder::Hilbert);
    let clustered = step(InsertionOrder::Clustered {
        window: 64,
        seed: 1,
    });
    // The generator's own order is spatially random.
    assert!(as_stored > shuffled * 0.5, "{as_stored} vs {shuffled}");
    assert!(hilbert < shuffled / 50.0, "{hilbert} vs {shuffled}");
    assert!(clustered < shuffled / 10.0, "{clustered} vs {shuffled}");
    assert!(clustered > hilbert, "{clustered} vs {hilbert}");
}

#[test]
fn written_forms_round_trip() {
    for order in all_orders(77, 1000) {
        let text = order.to_string();
        assert_eq!(text.parse::<InsertionOrder>().unwrap(), order, "{text}");
    }
    assert_eq!(
        "shuffled".parse::<InsertionOrder>().unwrap(),
        InsertionOrder::Shuffled {
            seed: DEFAULT_ORDER_SEED
        }
    );
    assert_eq!(
        "Clustered:1_000".parse::<InsertionOrder>().unwrap(),
        InsertionOrder::Clustered {
            window: 1000,
            seed: DEFAULT_ORDER_SEED
        }
    );
    assert_eq!(
        "clustered".parse::<InsertionOrder>().unwrap(),
        InsertionOrder::Clustered {
            window: DEFAULT_WINDOW,
            seed: DEFAULT_ORDER_SEED
        }
    );
}

#[test]
fn bad_orders_are_refused_with_a_clear_error() {
    let err = |s: &str| s.parse::<InsertionOrder>().unwrap_err().to_string();
    assert!(err("zorder").contains("unknown insertion order 'zorder'"));
    assert!(err("zorder").contains("clustered[:WINDOW[:SEED]]"));
    assert!(err("clustered:0").contains("window 0"));
    assert!(err("clustered:0:5").contains("window 0"));
    assert!(err("clustered:-3").contains("'-3' is not a whole non-negative number"));
    assert!(err("clustered:10:x").contains("seed 'x'"));
    assert!(err("clustered:1:2:3").contains("at most a window and a seed"));
    assert!(err("shuffled:1:2").contains("one parameter"));
    assert!(err("shuffled:abc").contains("seed 'abc'"));
    assert!(err("hilbert:3").contains("takes no parameter"));
    assert!(err("x:1").contains("takes no parameter"));
    assert!(err("").contains("unknown insertion order"));
    // A window 0 built in code is refused when applied.
    let mut ds = data(Distribution::Uniform, 10, 1);
    assert!(InsertionOrder::Clustered { window: 0, seed: 1 }
        .apply(&mut ds)
        .unwrap_err()
        .to_string()
        .contains("window 0"));
}
