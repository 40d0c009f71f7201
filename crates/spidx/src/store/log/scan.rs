//! The recovery scan of a [`Log`]: walks the live region's record stream, stops at the end
//! of the last committed operation, and tells a torn tail (nothing valid after it) from
//! damage in the middle (valid records after a damaged one), as the module documentation of
//! [`super`] describes.

use super::*;

impl Log {
    /// Scans the live region; positions the log after its last committed operation.
    pub(super) fn scan(&mut self) -> Result<Recovered> {
        let ps = self.page_size;
        let cap = self.capacity_bytes();
        let base = 2 + self.at.region * self.region_pages;
        let region_pages = self.region_pages;
        let chunk_pages = 64u64.min(region_pages);
        let mut data: Vec<u8> = Vec::new();
        let mut loaded = 0u64;
        // Loads pages until `data` holds `upto` bytes; false if that is past the region.
        let mut ensure = |data: &mut Vec<u8>, upto: u64, dev: &mut dyn Device| -> Result<bool> {
            if upto > cap {
                return Ok(false);
            }
            while (data.len() as u64) < upto {
                let n = chunk_pages.min(region_pages - loaded);
                let mut buf = vec![0u8; n as usize * ps];
                dev.read(base + loaded, &mut buf)?;
                loaded += n;
                data.extend_from_slice(&buf);
            }
            Ok(true)
        };
        let gen = self.at.generation as u32;
        let mut prev = self.seed();
        let mut pos = 0u64;
        let mut committed_end = 0u64;
        let mut committed_crc = prev;
        let mut ops = Vec::new();
        let mut current: Vec<Vec<u8>> = Vec::new();
        let end = loop {
            if !ensure(&mut data, pos + RECORD_HEADER as u64, self.dev.as_mut())? {
                break ScanEnd::End;
            }
            let h = &data[pos as usize..pos as usize + RECORD_HEADER];
            let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
            let (plen, rgen, kind, crc) = (u32_at(0), u32_at(4), u32_at(8), u32_at(12));
            if h.iter().all(|b| *b == 0) {
                // Never written: the end of the stream.
                break ScanEnd::End;
            }
            if rgen != gen {
                // Left by another generation: the end of the stream, unless the record
                // chains on the live stream with the live generation put back (only its
                // generation field was damaged).
                let mut fixed = [0u8; 12];
                fixed.copy_from_slice(&h[0..12]);
                fixed[4..8].copy_from_slice(&gen.to_le_bytes());
                let end = pos + RECORD_HEADER as u64 + u64::from(plen);
                if (kind == KIND_DATA || kind == KIND_COMMIT)
                    && ensure(&mut data, end, self.dev.as_mut())?
                {
                    let payload = &data[pos as usize + RECORD_HEADER..end as usize];
                    if record_crc(prev, &fixed, payload) == crc {
                        break ScanEnd::Invalid {
                            offset: pos,
                            reason: format!(
                                "{GENERATION_DAMAGED} (it says {rgen}, the stream is {gen})"
                            ),
                        };
                    }
                }
                break ScanEnd::End;
            }
            let invalid = |reason: String| ScanEnd::Invalid {
                offset: pos,
                reason,
            };
            if kind != KIND_DATA && kind != KIND_COMMIT {
                break invalid(format!("unknown record kind {kind}"));
            }
            let end = pos + RECORD_HEADER as u64 + u64::from(plen);
            if !ensure(&mut data, end, self.dev.as_mut())? {
                break invalid(format!("record length {plen} runs past the region"));
            }
            let h = &data[pos as usize..pos as usize + RECORD_HEADER];
            let payload = &data[pos as usize + RECORD_HEADER..end as usize];
            if record_crc(prev, &h[0..12], payload) != crc {
                break invalid("checksum mismatch (torn, corrupted or stale record)".into());
            }
            prev = crc;
            if kind == KIND_DATA {
                current.push(payload.to_vec());
            } else {
                ops.push(std::mem::take(&mut current));
                committed_end = end;
                committed_crc = crc;
            }
            pos = end;
        };
        self.at.used = committed_end;
        self.at.prev_crc = committed_crc;
        Ok(Recovered {
            operations: ops,
            dropped_records: current.len() as u64,
            dropped_bytes: pos - committed_end,
            end,
            generation: self.at.generation,
            format: LOG_FORMAT,
            ignored_header: None,
            accepted_loss: None,
        })
    }

    /// The generation of the first record of `region` if it is above `generation` and the
    /// record is valid: chained on the seed of its generation, `region` and `nonce` (the
    /// nonce is kept by compactions). A region whose header is damaged holds a newer log
    /// exactly when a compaction wrote one there, and that log's first record verifies so.
    pub(super) fn newer_records(
        &mut self,
        region: u64,
        generation: u64,
        nonce: u64,
    ) -> Result<Option<u64>> {
        let ps = self.page_size;
        let base = 2 + region * self.region_pages;
        let mut first = vec![0u8; ps];
        self.dev.read(base, &mut first)?;
        let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4"));
        let (plen, rgen, kind, crc) = (
            u32_at(&first, 0) as usize,
            u32_at(&first, 4),
            u32_at(&first, 8),
            u32_at(&first, 12),
        );
        if kind != KIND_DATA && kind != KIND_COMMIT {
            return Ok(None);
        }
        // The full generation: the 32 bits a record carries, above `generation`.
        let low = generation as u32;
        let ahead = u64::from(rgen.wrapping_sub(low));
        if ahead == 0 || ahead > 1 << 16 {
            return Ok(None);
        }
        let g = generation + ahead;
        let end = RECORD_HEADER as u64 + plen as u64;
        if end > self.capacity_bytes() {
            return Ok(None);
        }
        let mut data = first;
        if end as usize > data.len() {
            let pages = (end as usize).div_ceil(ps);
            data = vec![0u8; pages * ps];
            self.dev.read(base, &mut data)?;
        }
        let mut h = crc32fast::Hasher::new();
        h.update(&g.to_le_bytes());
        h.update(&region.to_le_bytes());
        h.update(&nonce.to_le_bytes());
        let seed = h.finalize();
        let ok = record_crc(seed, &data[0..12], &data[RECORD_HEADER..end as usize]) == crc;
        Ok(ok.then_some(g))
    }

    /// Reads the live region's record stream from byte `from` to the region's end.
    pub(super) fn read_stream(&mut self, from: u64) -> Result<Vec<u8>> {
        let ps = self.page_size as u64;
        let first = from / ps;
        let base = 2 + self.at.region * self.region_pages;
        let mut data = Vec::with_capacity(((self.region_pages - first) * ps) as usize);
        let mut p = first;
        while p < self.region_pages {
            let n = 64u64.min(self.region_pages - p);
            let mut buf = vec![0u8; (n * ps) as usize];
            self.dev.read(base + p, &mut buf)?;
            data.extend_from_slice(&buf);
            p += n;
        }
        data.drain(..(from - first * ps) as usize);
        Ok(data)
    }

    /// Looks for valid records of the live stream after the invalid record at byte `at`
    /// (see the module documentation); `None` if there are none (a torn tail).
    pub(super) fn valid_after(&mut self, at: u64) -> Result<Option<After>> {
        let data = self.read_stream(at)?;
        let gen = self.at.generation as u32;
        let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
        // The record at `q` if its header is of the live stream and it fits: (end, crc).
        let record = |q: usize| -> Option<(usize, u32)> {
            if q + RECORD_HEADER > data.len() || u32_at(q + 4) != gen {
                return None;
            }
            let kind = u32_at(q + 8);
            if kind != KIND_DATA && kind != KIND_COMMIT {
                return None;
            }
            let end = q.checked_add(RECORD_HEADER + u32_at(q) as usize)?;
            (end <= data.len()).then_some((end, u32_at(q + 12)))
        };
        let chained = |q: usize, end: usize, prev: u32, crc: u32| {
            record_crc(prev, &data[q..q + 12], &data[q + RECORD_HEADER..end]) == crc
        };
        // The damaged record's stored CRC (what its successor chains on).
        let stored = (data.len() >= RECORD_HEADER).then(|| u32_at(12));
        let mut found = None;
        for q in 1..data.len().saturating_sub(RECORD_HEADER - 1) {
            let Some((end, crc)) = record(q) else {
                continue;
            };
            let successor = stored.is_some_and(|s| chained(q, end, s, crc));
            let pair = || record(end).is_some_and(|(end2, crc2)| chained(end, end2, crc, crc2));
            if successor || pair() {
                found = Some((q, crc));
                break;
            }
        }
        let Some((q, _)) = found else {
            return Ok(None);
        };
        // Count the valid stream from there on (the first record's chain was verified
        // above, or by its successor).
        let mut after = After {
            offset: at + q as u64,
            records: 0,
            commits: 0,
        };
        let mut pos = q;
        let mut prev: Option<u32> = None;
        while let Some((end, crc)) = record(pos) {
            if prev.is_some_and(|p| !chained(pos, end, p, crc)) {
                break;
            }
            after.records += 1;
            if u32_at(pos + 8) == KIND_COMMIT {
                after.commits += 1;
            }
            prev = Some(crc);
            pos = end;
        }
        Ok(Some(after))
    }
}

/// Valid records found after a damaged one (see [`Log::valid_after`]).
pub(super) struct After {
    /// Byte offset of the first of them in the record stream.
    pub(super) offset: u64,
    /// Records of the valid run.
    pub(super) records: u64,
    /// Commit markers among them.
    pub(super) commits: u64,
}
