//! Replacement policies against straightforward reference models: the model of each
//! policy is a few `Vec`s scanned linearly, written from the policy's definition; random
//! access traces must give the same hits, admissions and evictions.

// In a module named `cache` so that `cargo test -p spidx cache` runs these tests.
mod cache {
    use std::collections::HashMap;

    use proptest::prelude::*;
    use spidx::cache::{CachePolicy, Hlru, Lru, ReplacementPolicy, S2q, TwoQ, MAX_LEVEL};

    /// What one access did.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Outcome {
        hit: bool,
        resident: bool,
        evicted: Vec<u64>,
    }

    const HIT: Outcome = Outcome {
        hit: true,
        resident: true,
        evicted: Vec::new(),
    };

    fn miss(resident: bool, evicted: Vec<u64>) -> Outcome {
        Outcome {
            hit: false,
            resident,
            evicted,
        }
    }

    /// Drives a policy as a buffer would: touch on a hit, admit on a miss.
    fn access(p: &mut dyn ReplacementPolicy, key: u64, level: u32) -> Outcome {
        if p.contains(key) {
            assert!(p.touch(key, level));
            HIT
        } else {
            let mut evicted = Vec::new();
            let resident = p.admit(key, level, &mut evicted);
            assert_eq!(resident, p.contains(key));
            miss(resident, evicted)
        }
    }

    fn take(v: &mut Vec<u64>, key: u64) -> bool {
        match v.iter().position(|&k| k == key) {
            Some(i) => {
                v.remove(i);
                true
            }
            None => false,
        }
    }

    trait Model {
        fn access(&mut self, key: u64, level: u32) -> Outcome;
        fn remove(&mut self, key: u64) -> bool;
        fn clear(&mut self);
        fn len(&self) -> usize;
    }

    /// LRU: `order[0]` is the least recently used key.
    struct LruModel {
        cap: usize,
        order: Vec<u64>,
    }

    impl Model for LruModel {
        fn access(&mut self, key: u64, _level: u32) -> Outcome {
            if take(&mut self.order, key) {
                self.order.push(key);
                return HIT;
            }
            if self.cap == 0 {
                return miss(false, vec![]);
            }
            let mut ev = vec![];
            if self.order.len() == self.cap {
                ev.push(self.order.remove(0));
            }
            self.order.push(key);
            miss(true, ev)
        }
        fn remove(&mut self, key: u64) -> bool {
            take(&mut self.order, key)
        }
        fn clear(&mut self) {
            self.order.clear();
        }
        fn len(&self) -> usize {
            self.order.len()
        }
    }

    /// HLRU: `order[0]` is the least recently used (key, level); the victim is the first
    /// entry whose level is at most the incoming level.
    struct HlruModel {
        cap: usize,
        order: Vec<(u64, u32)>,
    }

    impl Model for HlruModel {
        fn access(&mut self, key: u64, level: u32) -> Outcome {
            let level = level.min(MAX_LEVEL);
            if let Some(i) = self.order.iter().position(|&(k, _)| k == key) {
                self.order.remove(i);
                self.order.push((key, level));
                return HIT;
            }
            if self.cap == 0 {
                return miss(false, vec![]);
            }
            let mut ev = vec![];
            if self.order.len() == self.cap {
                match self.order.iter().position(|&(_, l)| l <= level) {
                    Some(i) => ev.push(self.order.remove(i).0),
                    None => return miss(false, vec![]),
                }
            }
            self.order.push((key, level));
            miss(true, ev)
        }
        fn remove(&mut self, key: u64) -> bool {
            let before = self.order.len();
            self.order.retain(|&(k, _)| k != key);
            before != self.order.len()
        }
        fn clear(&mut self) {
            self.order.clear();
        }
        fn len(&self) -> usize {
            self.order.len()
        }
    }

    /// Simplified 2Q: `a1[0]` is the oldest of the FIFO, `am[0]` the LRU page of `Am`.
    struct S2qModel {
        cap: usize,
        threshold: usize,
        a1: Vec<u64>,
        am: Vec<u64>,
    }

    impl Model for S2qModel {
        fn access(&mut self, key: u64, _level: u32) -> Outcome {
            if take(&mut self.am, key) || take(&mut self.a1, key) {
                self.am.push(key);
                return HIT;
            }
            if self.cap == 0 {
                return miss(false, vec![]);
            }
            let mut ev = vec![];
            if self.a1.len() + self.am.len() == self.cap {
                if self.a1.len() > self.threshold || self.am.is_empty() {
                    ev.push(self.a1.remove(0));
                } else {
                    ev.push(self.am.remove(0));
                }
            }
            self.a1.push(key);
            miss(true, ev)
        }
        fn remove(&mut self, key: u64) -> bool {
            take(&mut self.a1, key) || take(&mut self.am, key)
        }
        fn clear(&mut self) {
            self.a1.clear();
            self.am.clear();
        }
        fn len(&self) -> usize {
            self.a1.len() + self.am.len()
        }
    }

    /// Full 2Q, transcribed from Johnson & Shasha's pseudo-code; index 0 is the oldest end
    /// of every queue.
    struct TwoQModel {
        cap: usize,
        kin: usize,
        kout: usize,
        a1in: Vec<u64>,
        am: Vec<u64>,
        a1out: Vec<u64>,
    }

    impl TwoQModel {
        fn reclaim(&mut self, ev: &mut Vec<u64>) {
            if self.a1in.len() + self.am.len() < self.cap {
                return;
            }
            if self.a1in.len() > self.kin || self.am.is_empty() {
                let y = self.a1in.remove(0);
                ev.push(y);
                self.a1out.push(y);
                if self.a1out.len() > self.kout {
                    self.a1out.remove(0);
                }
            } else {
                ev.push(self.am.remove(0));
            }
        }
    }

    impl Model for TwoQModel {
        fn access(&mut self, key: u64, _level: u32) -> Outcome {
            if take(&mut self.am, key) {
                self.am.push(key);
                return HIT;
            }
            if self.a1in.contains(&key) {
                return HIT;
            }
            if self.cap == 0 {
                return miss(false, vec![]);
            }
            let mut ev = vec![];
            if take(&mut self.a1out, key) {
                self.reclaim(&mut ev);
                self.am.push(key);
            } else {
                self.reclaim(&mut ev);
                self.a1in.push(key);
            }
            miss(true, ev)
        }
        fn remove(&mut self, key: u64) -> bool {
            take(&mut self.a1out, key);
            take(&mut self.a1in, key) || take(&mut self.am, key)
        }
        fn clear(&mut self) {
            self.a1in.clear();
            self.am.clear();
            self.a1out.clear();
        }
        fn len(&self) -> usize {
            self.a1in.len() + self.am.len()
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Access(u64, u32),
        Remove(u64),
        Clear,
    }

    fn ops(keys: u64) -> impl Strategy<Value = Vec<Op>> {
        let op = prop_oneof![
            40 => (0..keys, 0u32..4).prop_map(|(k, l)| Op::Access(k, l)),
            // Skew: a few hot keys.
            20 => (0..3u64, 0u32..4).prop_map(|(k, l)| Op::Access(k, l)),
            2 => (0..keys).prop_map(Op::Remove),
            1 => Just(Op::Clear),
        ];
        prop::collection::vec(op, 0..300)
    }

    /// Runs a trace on a policy and its model, step by step; `check` sees the policy after
    /// every access with the outcome.
    fn compare(
        p: &mut dyn ReplacementPolicy,
        m: &mut dyn Model,
        trace: &[Op],
        mut check: impl FnMut(&dyn ReplacementPolicy, &Op, &Outcome),
    ) -> Result<(), TestCaseError> {
        for (step, op) in trace.iter().enumerate() {
            match *op {
                Op::Access(k, l) => {
                    let got = access(p, k, l);
                    let want = m.access(k, l);
                    prop_assert_eq!(&got, &want, "step {}: {:?}", step, op);
                    check(p, op, &got);
                }
                Op::Remove(k) => prop_assert_eq!(p.remove(k), m.remove(k), "step {}", step),
                Op::Clear => {
                    p.clear();
                    m.clear();
                }
            }
            prop_assert_eq!(p.len(), m.len(), "step {}", step);
            prop_assert!(p.len() <= p.capacity());
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn lru_matches_model(cap in 0usize..8, trace in ops(20)) {
            let mut p = Lru::new(cap);
            let mut m = LruModel { cap, order: vec![] };
            compare(&mut p, &mut m, &trace, |_, _, _| {})?;
            let mut want = m.order.clone();
            want.reverse();
            prop_assert_eq!(p.keys(), want);
        }

        #[test]
        fn hlru_matches_model_and_never_evicts_upward(cap in 0usize..8, trace in ops(20)) {
            let mut p = Hlru::new(cap);
            let mut m = HlruModel { cap, order: vec![] };
            let mut levels: HashMap<u64, u32> = HashMap::new();
            let mut bad = None;
            compare(&mut p, &mut m, &trace, |p, op, out| {
                let Op::Access(k, l) = *op else { return };
                for v in &out.evicted {
                    if levels[v] > l {
                        bad = Some((*v, levels[v], k, l));
                    }
                }
                if p.contains(k) {
                    levels.insert(k, l);
                }
            })?;
            prop_assert!(bad.is_none(), "evicted (key, level) for (key, level): {:?}", bad);
        }

        #[test]
        fn s2q_matches_model(cap in 0usize..8, thr in 0usize..8, trace in ops(20)) {
            let mut p = S2q::new(cap, thr);
            let mut m = S2qModel { cap, threshold: thr, a1: vec![], am: vec![] };
            compare(&mut p, &mut m, &trace, |_, _, _| {})?;
            let (a1, am) = p.queues();
            let rev = |v: &Vec<u64>| v.iter().rev().copied().collect::<Vec<_>>();
            prop_assert_eq!((a1, am), (rev(&m.a1), rev(&m.am)));
        }

        #[test]
        fn two_q_matches_model(cap in 0usize..8, kin in 0usize..8, kout in 0usize..12,
                               trace in ops(20)) {
            let mut p = TwoQ::new(cap, kin, kout);
            let mut m = TwoQModel {
                cap, kin, kout, a1in: vec![], am: vec![], a1out: vec![],
            };
            for (step, op) in trace.iter().enumerate() {
                // A key re-accessed while in A1out must land in Am.
                let was_ghost = matches!(op, Op::Access(k, _) if m.a1out.contains(k));
                compare(&mut p, &mut m, std::slice::from_ref(op), |_, _, _| {})?;
                if let (true, Op::Access(k, _)) = (was_ghost, op) {
                    prop_assert!(p.queues().1.contains(k), "step {}: ghost {} not in Am", step, k);
                }
                prop_assert!(p.queues().2.len() <= kout);
            }
            let (a1in, am, a1out) = p.queues();
            let rev = |v: &Vec<u64>| v.iter().rev().copied().collect::<Vec<_>>();
            prop_assert_eq!((a1in, am, a1out), (rev(&m.a1in), rev(&m.am), rev(&m.a1out)));
        }

        #[test]
        fn built_policies_respect_capacity(cap in 1usize..40, trace in ops(100)) {
            for kind in CachePolicy::ALL {
                let mut p = kind.build(cap, 25.0, 50.0);
                for op in &trace {
                    if let Op::Access(k, l) = *op {
                        access(p.as_mut(), k, l);
                    }
                    prop_assert!(p.len() <= p.capacity());
                }
            }
        }
    }

    #[test]
    fn two_q_ghost_queue_sends_a_returning_page_to_am() {
        // 4 pages: Kin = 1, Kout = 2 with the default shares.
        let mut p = TwoQ::new(4, 1, 2);
        let mut ev = Vec::new();
        for k in 1..=4 {
            p.admit(k, 0, &mut ev);
        }
        assert!(ev.is_empty());
        p.admit(5, 0, &mut ev);
        assert_eq!(ev, [1], "the oldest page of A1in leaves first");
        assert_eq!(p.queues(), (vec![5, 4, 3, 2], vec![], vec![1]));
        ev.clear();
        assert!(p.admit(1, 0, &mut ev), "page 1 is back");
        assert_eq!(ev, [2]);
        assert_eq!(p.queues(), (vec![5, 4, 3], vec![1], vec![2]));
        // A page accessed twice while in A1in stays there (correlated references).
        assert!(p.touch(3, 0));
        assert_eq!(p.queues().0, [5, 4, 3]);
        // Without a ghost entry (forgotten after Kout newer ghosts) a page starts in A1in.
        for k in 10..13 {
            p.admit(k, 0, &mut ev);
        }
        assert!(!p.queues().2.contains(&2));
        p.admit(2, 0, &mut ev);
        assert_eq!(p.queues().0[0], 2);
        // The defaults build Kin = 25 % and Kout = 50 % of the capacity.
        let q = CachePolicy::TwoQ.build(8, 25.0, 50.0);
        assert_eq!((q.name(), q.capacity()), ("2q", 8));
        assert_eq!(TwoQ::new(8, 2, 4).params(), (2, 4));
    }
}
