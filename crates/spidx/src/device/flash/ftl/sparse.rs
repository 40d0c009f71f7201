//! The FTL's logical→physical map: a table split into chunks allocated when first
//! written, so a large device that is mostly unwritten costs little memory.

use serde::{Deserialize, Serialize};

use super::{CHUNK, CHUNK_BITS, NONE};

/// A sparse logical→physical map: chunks of the table are allocated when first written.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct SparseMap {
    pub(super) chunks: Vec<Option<Box<[u32]>>>,
}

impl SparseMap {
    pub(super) fn new(len: u32) -> Self {
        let n = (len as usize).div_ceil(CHUNK);
        SparseMap {
            chunks: vec![None; n],
        }
    }

    pub(super) fn get(&self, i: u32) -> u32 {
        match self.chunks.get((i >> CHUNK_BITS) as usize) {
            Some(Some(c)) => c[i as usize & (CHUNK - 1)],
            _ => NONE,
        }
    }

    pub(super) fn set(&mut self, i: u32, v: u32) {
        let c = self.chunks[(i >> CHUNK_BITS) as usize]
            .get_or_insert_with(|| vec![NONE; CHUNK].into_boxed_slice());
        c[i as usize & (CHUNK - 1)] = v;
    }

    /// Whether the chunk holding entry `i` was never written (all its entries unmapped).
    pub(super) fn chunk_is_empty(&self, i: u32) -> bool {
        self.chunks
            .get((i >> CHUNK_BITS) as usize)
            .is_none_or(|c| c.is_none())
    }

    /// (logical, physical) pairs of every mapped page.
    pub(super) fn mapped(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(ci, c)| {
            c.iter().flat_map(move |c| {
                c.iter()
                    .enumerate()
                    .filter(|(_, &p)| p != NONE)
                    .map(move |(i, &p)| (((ci << CHUNK_BITS) + i) as u32, p))
            })
        })
    }
}
