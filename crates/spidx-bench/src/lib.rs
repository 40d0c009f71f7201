//! Benchmarks of spidx against other spatial index implementations.
//!
//! * [`data`]: the deterministic workload (uniform small rectangles, square windows);
//! * [`runs`]: one measured run of one implementation (build by one-by-one insertion,
//!   then window queries), as executed in a child process of the `index_vs_libs` binary;
//! * [`peers`]: the C++ peers (Boost.Geometry, libspatialindex) and the ratio table;
//! * [`sys`]: process measurements (peak RSS, CPU time) and machine facts.

pub mod data;
pub mod peers;
pub mod runs;
pub mod sys;
