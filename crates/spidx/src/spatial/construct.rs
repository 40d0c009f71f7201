//! The construction protocol (architecture §7): how an index is built from a dataset, the
//! same for `spidx build`, the experiment runner and Python, so a figure measured by one is
//! the figure of the others.
//!
//! Three phases, each measured apart ([`PhaseReport`]):
//! 1. `load` — the objects' exact geometries go to the object store (2-D datasets with
//!    geometries only; not index work, so not part of the construction's figures);
//! 2. `construction` — one-by-one insertion in the dataset's order, or a bulk load;
//! 3. `final_flush` — what the store still buffers goes to the device (unless the caller
//!    leaves the buffers dirty for the next workload), measured apart so a write buffer's
//!    deferred cost stays visible.
//!
//! The caller watches (and may act between insertions, e.g. take a checkpoint) through
//! [`Step`]s; everything it does there counts in the construction phase.

use serde::Serialize;

use super::{PhaseReport, SpatialIndex};
use crate::data::Dataset;
use crate::index::bulk::BulkOptions;
use crate::Result;

/// How to construct: one-by-one insertion or a bulk load, and whether the store's buffers
/// are written back at the end.
#[derive(Debug, Clone, Copy)]
pub struct Construction<'a> {
    /// A bulk load with these options; `None` inserts the objects one by one.
    pub bulk: Option<&'a BulkOptions>,
    /// Write the store's buffered pages back at the end (phase `final_flush`).
    pub final_flush: bool,
}

/// The figures of each phase of one construction.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConstructionReport {
    /// Storing the exact geometries; `None` when the dataset has none (boxes, vectors).
    pub load: Option<PhaseReport>,
    /// Insertion or bulk load.
    pub construction: PhaseReport,
    /// The store's final write-back; `None` when not asked for.
    pub final_flush: Option<PhaseReport>,
}

/// Progress of a construction, given to the caller's observer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// One more exact geometry stored (phase `load`).
    Stored,
    /// The `n`-th object inserted (1-based; one-by-one construction).
    Inserted(u64),
    /// A bulk load of this many objects done.
    BulkLoaded(u64),
}

impl<const D: usize> SpatialIndex<D> {
    /// Builds the index over `ds` by the construction protocol (module header): the
    /// observer sees every [`Step`] and may act on the index between steps (its time counts
    /// in the phase it interrupts); an error from it stops the construction.
    pub fn construct(
        &mut self,
        ds: &Dataset,
        how: Construction<'_>,
        observe: &mut dyn FnMut(&mut Self, Step) -> Result<()>,
    ) -> Result<ConstructionReport> {
        let mut report = ConstructionReport::default();
        if let Some(records) = ds.as_geo() {
            let clock = self.phase();
            for r in records {
                self.put_object(r.id, &r.geometry)?;
                observe(self, Step::Stored)?;
            }
            report.load = Some(self.stop_phase(clock));
        }
        let clock = self.phase();
        match how.bulk {
            Some(opts) => {
                self.bulk_load(ds.boxes::<D>()?, opts)
                    .map_err(|e| e.context("bulk loading"))?;
                observe(self, Step::BulkLoaded(ds.len() as u64))?;
            }
            None => {
                for i in 0..ds.len() {
                    let (id, mbr) = ds.object::<D>(i)?;
                    self.insert(mbr, id)
                        .map_err(|e| e.context(format_args!("inserting object {id}")))?;
                    observe(self, Step::Inserted(i as u64 + 1))?;
                }
            }
        }
        report.construction = self.stop_phase(clock);
        if how.final_flush {
            let clock = self.phase();
            self.write_back()?;
            report.final_flush = Some(self.stop_phase(clock));
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::GeoRecord;
    use crate::experiment::{matrix, spec};
    use crate::geom::Rect;
    use crate::index::bulk::BulkMethod;
    use crate::query::Predicate;
    use crate::Error;
    use geo::{polygon, Geometry};

    fn index(dir: &std::path::Path, store: &str) -> SpatialIndex<2> {
        let text = format!(
            r#"
name = "c"
[dataset]
generate = {{ distribution = "uniform", count = 10 }}
[matrix]
index = [{{ kind = "rtree" }}]
store = [{store}]
[[workload]]
kind = "construction"
"#
        );
        let s = spec::parse(&text, "c.toml", std::path::Path::new(".")).unwrap();
        let run = matrix::expand(&s, 2).unwrap().remove(0);
        SpatialIndex::<2>::create(dir, run.options, true).unwrap()
    }

    fn squares(n: u64) -> Dataset {
        let square = |x: f64| -> Geometry<f64> {
            polygon!((x: x, y: 0.), (x: x + 1., y: 0.), (x: x + 1., y: 1.), (x: x, y: 1.), (x: x, y: 0.)).into()
        };
        Dataset::Geo(
            (0..n)
                .map(|i| GeoRecord::new(100 + i, square(i as f64 * 2.0)).unwrap())
                .collect(),
        )
    }

    #[test]
    fn every_object_is_stored_then_inserted_in_order_and_answers() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir.path().join("i"), r#"{ kind = "direct" }"#);
        let ds = squares(300);
        let mut steps = Vec::new();
        let how = Construction {
            bulk: None,
            final_flush: false,
        };
        let rep = idx
            .construct(&ds, how, &mut |_, s| {
                steps.push(s);
                Ok(())
            })
            .unwrap();
        let mut expected = vec![Step::Stored; 300];
        expected.extend((1..=300).map(Step::Inserted));
        assert_eq!(steps, expected);
        assert!(rep.load.is_some() && rep.final_flush.is_none());
        assert!(rep.construction.cpu_s > 0.0);
        assert_eq!(idx.tree().meta().objects, 300);
        let all = Rect::new([-1.0, -1.0], [1e4, 2.0]).unwrap();
        let mut ids = idx
            .select(&all, None, Predicate::Intersects, false)
            .unwrap()
            .ids;
        ids.sort_unstable();
        assert_eq!(ids, (100..400).collect::<Vec<_>>());
    }

    #[test]
    fn a_bulk_load_is_one_step_and_the_final_flush_empties_the_write_buffer() {
        let dir = tempfile::tempdir().unwrap();
        let fast = r#"{ kind = "fast", write_buffer = "64KB", flushing_unit = 4, flush_policy = "fast-star" }"#;
        let mut idx = index(&dir.path().join("i"), fast);
        let ds = squares(500);
        let opts = BulkOptions {
            method: BulkMethod::Str,
            fill: 1.0,
        };
        let mut steps = Vec::new();
        let how = Construction {
            bulk: Some(&opts),
            final_flush: true,
        };
        let rep = idx
            .construct(&ds, how, &mut |_, s| {
                if s != Step::Stored {
                    steps.push(s);
                }
                Ok(())
            })
            .unwrap();
        assert_eq!(steps, [Step::BulkLoaded(500)]);
        let flush = rep.final_flush.expect("asked for");
        assert!(flush.device.host.write_ops > 0, "{flush:?}");
        assert_eq!(idx.tree().meta().objects, 500);
    }

    #[test]
    fn an_observer_error_stops_the_construction_and_keeps_its_kind() {
        let dir = tempfile::tempdir().unwrap();
        let mut idx = index(&dir.path().join("i"), r#"{ kind = "direct" }"#);
        let how = Construction {
            bulk: None,
            final_flush: true,
        };
        let err = idx
            .construct(&squares(50), how, &mut |_, s| match s {
                Step::Inserted(10) => Err(Error::DeviceFull("test".into())),
                _ => Ok(()),
            })
            .unwrap_err();
        assert!(matches!(err, Error::DeviceFull(_)), "{err}");
        assert_eq!(idx.tree().meta().objects, 10);
    }

    #[test]
    fn context_keeps_the_error_kind() {
        let e = Error::DeviceFull("no free block".into()).context("inserting object 7");
        assert!(
            matches!(&e, Error::DeviceFull(m) if m.contains("object 7")),
            "{e}"
        );
        let e = Error::invalid("box", "NaN").context("inserting object 7");
        assert!(matches!(&e, Error::InvalidOption { .. }));
        assert!(e.to_string().contains("object 7") && e.to_string().contains("NaN"));
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
        let e = Error::io("/x", io).context("checkpoint");
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull)
        );
        assert!(e.to_string().contains("checkpoint: disk full"), "{e}");
    }
}
