//! The query layer above the index: exact predicates ([`predicate`]) for the refinement
//! step of `DESIGN.md` section 7.

pub mod predicate;

pub use predicate::Predicate;
