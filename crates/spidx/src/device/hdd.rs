//! The simulated hard disk: a [`Device`] whose virtual clock follows the mechanics of a
//! rotating drive, so that HDD experiments are reproducible on any machine.
//!
//! Each request costs controller overhead, then, unless the drive's buffer can serve it,
//! a seek (curve `a + b·√d` / `c + e·d`, see [`SeekCurve`]), the rotational latency until
//! the first sector passes under the head (the platters turn with the clock: the angle is
//! the time modulo a revolution, from an initial angle derived from the seed) and the media
//! transfer. Data lives in memory (only pages actually written cost memory); timing is a
//! separate, deterministic model of the head, the platter angle and the drive buffer.
//!
//! The buffer (segment cache) follows what desktop drives do:
//! - **read-ahead**: after a read from the media the drive keeps reading the following
//!   sectors into a buffer segment, at the media rate, up to `read_ahead_kb` past the last
//!   request. A later request for data already read is served at interface speed; one for
//!   data the read-ahead is about to reach waits only for it. A sequential stream therefore
//!   runs at the media rate with no seeks and no rotational latency. Older segments (up to
//!   `segments`) are kept, least recently used first out, so re-reads hit as well.
//! - **write-back caching** (`write_cache`): writes are acknowledged once in the buffer.
//!   When more than half of the buffer is dirty the drive writes runs of dirty pages back
//!   whenever the mechanics are free, in C-SCAN order from the head (so it coalesces and
//!   reorders them); a read that needs the media waits for the run in progress, and a
//!   write that finds the buffer full waits until a run has made room. A stream of
//!   sequential writes thus runs at the media rate, random writes at the elevator's rate.
//!   [`Device::sync`] and [`Device::drop_caches`] wait until everything is written back.
//!
//! The buffer model does not make reads and writes compete for buffer space: dirty data
//! may use the whole `cache_kb`, and so may the read segments. Track switches within a
//! transfer cost the track-to-track time (counted in `seek_ns`, not as seeks).

mod config;
mod drives;
mod geometry;
#[cfg(test)]
mod tests;

pub use config::HddConfig;
use config::HddConfigV4;
pub use geometry::SeekCurve;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use self::geometry::{Geometry, Loc};
use super::paged::{Indexed, PageStore};
use super::pages::{
    decode_state, load_state_payload, save_state_as, HDD_WRITE_OVERHEAD_FORMAT, INDEX_PAGED_FORMAT,
    PAGED_FORMAT,
};
use super::stats::{DeviceStats, HddStats, HostCounters};
use super::{check_request, request_len, validate_page_size, Device};
use crate::{Error, Result};

/// The read-ahead stream: the buffer segment the drive is currently filling.
/// Sectors `seg_start..pos(t)` are in the buffer at time `t`; reading proceeds from `s0`
/// at time `t0` at the sustained media rate until `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Stream {
    seg_start: u64,
    s0: u64,
    t0: u64,
    limit: u64,
    spt: u64,
}

impl Stream {
    fn pos(&self, t: u64, period: u64) -> u64 {
        if t <= self.t0 {
            return self.s0;
        }
        let adv = (t - self.t0) as u128 * self.spt as u128 / period as u128;
        self.s0 + adv.min((self.limit - self.s0) as u128) as u64
    }

    /// Time at which sector `e - 1` has been read (`s0 < e <= limit`).
    fn ready_at(&self, e: u64, period: u64) -> u64 {
        self.t0 + ((e - self.s0) as u128 * period as u128).div_ceil(self.spt as u128) as u64
    }
}

/// Mechanical and buffer state: everything the timing depends on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Mech {
    clock: u64,
    phase: u64,
    cyl: u64,
    head: u64,
    /// Time from which the mechanics are free (end of the last media access).
    free_at: u64,
    /// Page just after the last media access (where the elevator continues).
    next_page: u64,
    stream: Option<Stream>,
    /// Older read segments, most recently used first.
    segments: Vec<(u64, u64)>,
    /// Pages in the write cache not yet written to the media.
    dirty: BTreeSet<u64>,
}

/// What a persisted hard disk holds (borrowed for saving, owned for loading; postcard
/// encodes both the same way).
#[derive(Serialize)]
struct SavedRef<'a> {
    /// First, so that the pages file it names can be found (see [`super::paged`]).
    pages: Indexed<&'a PageStore>,
    config: &'a HddConfig,
    page_size: usize,
    mech: &'a Mech,
    host: &'a HostCounters,
    stats: &'a HddStats,
}

/// `P` is [`Indexed`]`<PageStore>` (formats [`HDD_WRITE_OVERHEAD_FORMAT`] and
/// [`INDEX_PAGED_FORMAT`]) or a [`PageStore`] (format [`PAGED_FORMAT`]); `C` is
/// [`HddConfig`] (format [`HDD_WRITE_OVERHEAD_FORMAT`]) or [`HddConfigV4`] (the others).
#[derive(Deserialize)]
struct Saved<P, C> {
    pages: P,
    config: C,
    page_size: usize,
    mech: Mech,
    host: HostCounters,
    stats: HddStats,
}

/// Largest clock value a loaded state may hold (146 years), far from overflow.
const MAX_CLOCK: u64 = 1 << 62;

/// A simulated hard disk with a deterministic virtual clock (see the module docs).
pub struct SimHdd {
    config: HddConfig,
    page_size: usize,
    /// Sectors per page.
    spp: u64,
    capacity_pages: u64,
    geo: Geometry,
    curve: SeekCurve,
    mech: Mech,
    data: PageStore,
    host: HostCounters,
    stats: HddStats,
    hit_ns: u64,
    miss_ns: u64,
    write_ns: u64,
    settle_ns: u64,
    iface_bps: u64,
    read_ahead: u64,
    seg_len: u64,
    lru_segments: usize,
    write_cache_pages: u64,
    write_back_at: u64,
    state_path: Option<PathBuf>,
}

impl SimHdd {
    /// Opens a simulated drive with pages of `page_size` bytes. With `state`, continues
    /// from the state a previous [`Device::persist`] saved there (if the file exists; it
    /// must have been made with the same configuration and page size) and saves to it.
    pub fn open(config: &HddConfig, page_size: usize, state: Option<&Path>) -> Result<SimHdd> {
        validate_page_size(page_size)?;
        let (geo, curve) = config.build()?;
        let ms = |v: f64| (v * 1e6).round() as u64;
        let mut dev = SimHdd {
            config: config.clone(),
            page_size,
            spp: (page_size / 512) as u64,
            capacity_pages: config.capacity / page_size as u64,
            mech: Mech {
                clock: 0,
                phase: splitmix64(config.seed) % geo.rev_ns,
                cyl: 0,
                head: 0,
                free_at: 0,
                next_page: 0,
                stream: None,
                segments: Vec::with_capacity(config.segments as usize),
                dirty: BTreeSet::new(),
            },
            geo,
            curve,
            data: PageStore::new_paged(page_size),
            host: HostCounters::default(),
            stats: HddStats::default(),
            hit_ns: ms(config.hit_overhead_us * 1e-3),
            miss_ns: ms(config.miss_overhead_us * 1e-3),
            write_ns: ms(config.write_overhead_us.unwrap_or(config.hit_overhead_us) * 1e-3),
            settle_ns: ms(config.write_settle_ms),
            iface_bps: (config.interface_mb_s * 1e6).round().max(1.0) as u64,
            read_ahead: config.read_ahead_kb * 2,
            seg_len: config.cache_kb * 2 / config.segments as u64,
            lru_segments: config.segments as usize - 1,
            write_cache_pages: if config.write_cache {
                config.cache_kb * 1024 / page_size as u64
            } else {
                0
            },
            write_back_at: 0,
            state_path: state.map(Path::to_path_buf),
        };
        dev.write_back_at = dev.write_cache_pages / 2;
        if dev.capacity_pages == 0 {
            return Err(Error::invalid(
                "page size",
                format!("{page_size} bytes is larger than the drive"),
            ));
        }
        if let Some(p) = state.filter(|p| p.exists()) {
            let (version, payload) = load_state_payload(
                p,
                "hdd",
                &[PAGED_FORMAT, INDEX_PAGED_FORMAT, HDD_WRITE_OVERHEAD_FORMAT],
            )?;
            let mut saved: Saved<Indexed<PageStore>, HddConfig> = if version == PAGED_FORMAT {
                let s: Saved<PageStore, HddConfigV4> = decode_state(p, &payload)?;
                Saved {
                    pages: Indexed(s.pages),
                    config: s.config.into(),
                    page_size: s.page_size,
                    mech: s.mech,
                    host: s.host,
                    stats: s.stats,
                }
            } else if version == INDEX_PAGED_FORMAT {
                let s: Saved<Indexed<PageStore>, HddConfigV4> = decode_state(p, &payload)?;
                Saved {
                    pages: s.pages,
                    config: s.config.into(),
                    page_size: s.page_size,
                    mech: s.mech,
                    host: s.host,
                    stats: s.stats,
                }
            } else {
                decode_state(p, &payload)?
            };
            if saved.page_size != page_size {
                return Err(Error::invalid(
                    "page size",
                    format!(
                        "{page_size} bytes, but the saved hard disk uses {}",
                        saved.page_size
                    ),
                ));
            }
            if saved.config != *config {
                return Err(Error::invalid(
                    "hdd configuration",
                    format!(
                        "differs from the one the saved drive {} was created with",
                        p.display()
                    ),
                ));
            }
            let cap = dev.capacity_pages;
            let pages = &mut saved.pages.0;
            if pages.page_size() != page_size || !dev.mech_is_consistent(&saved.mech) {
                return Err(Error::corrupted(
                    format!("device state {}", p.display()),
                    "pages or drive state do not fit the drive",
                ));
            }
            pages.attach(p)?;
            if pages.last_page()?.is_some_and(|k| k >= cap) {
                return Err(Error::corrupted(
                    format!("device state {}", p.display()),
                    "pages do not fit the drive",
                ));
            }
            pages.use_paged_index();
            dev.mech = saved.mech;
            dev.data = saved.pages.0;
            dev.host = saved.host;
            dev.stats = saved.stats;
        }
        Ok(dev)
    }

    /// Whether a loaded state fits this drive's geometry (so that no later computation
    /// can overflow or index out of range).
    fn mech_is_consistent(&self, m: &Mech) -> bool {
        let cap = self.cap_sectors();
        let stream_ok = match m.stream {
            None => true,
            Some(st) => {
                st.seg_start <= st.s0
                    && st.s0 <= st.limit
                    && st.limit <= cap
                    && st.spt > 0
                    && st.t0 < MAX_CLOCK
            }
        };
        m.clock < MAX_CLOCK
            && m.free_at < MAX_CLOCK
            && m.phase < self.geo.rev_ns
            && m.cyl < self.geo.cylinders
            && m.head < self.geo.heads()
            && m.next_page <= self.capacity_pages
            && stream_ok
            && m.segments.iter().all(|&(a, b)| a <= b && b <= cap)
            && m.dirty.range(self.capacity_pages..).next().is_none()
    }

    /// The configuration the drive was opened with.
    pub fn config(&self) -> &HddConfig {
        &self.config
    }

    /// The fitted seek curve.
    pub fn seek_curve(&self) -> &SeekCurve {
        &self.curve
    }

    /// Number of cylinders the address space spans.
    pub fn cylinders(&self) -> u64 {
        self.geo.cylinders
    }

    /// Cylinder holding the first sector of `page`.
    pub fn cylinder_of_page(&self, page: u64) -> u64 {
        self.geo
            .locate(page.min(self.capacity_pages - 1) * self.spp)
            .cyl
    }

    /// One revolution in nanoseconds.
    pub fn revolution_ns(&self) -> u64 {
        self.geo.rev_ns
    }

    fn iface_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000).div_ceil(self.iface_bps as u128) as u64
    }

    fn cap_sectors(&self) -> u64 {
        self.capacity_pages * self.spp
    }

    fn rot_wait(&self, t: u64, loc: &Loc) -> u64 {
        let rev = self.geo.rev_ns;
        let now = (t % rev + self.mech.phase) % rev;
        (self.geo.angle(loc) + rev - now) % rev
    }

    /// Reads or writes `n` sectors from `lba` on the media, starting at time `t` or when
    /// the mechanics are free, whichever is later (a write-back run in progress is not
    /// interrupted). Stops the read-ahead, leaves the head on the last track touched and
    /// returns the completion time.
    fn media(&mut self, t: u64, lba: u64, n: u64, write: bool) -> u64 {
        let mut t = t.max(self.mech.free_at);
        self.freeze_stream(t);
        let mut loc = self.geo.locate(lba);
        let d = loc.cyl.abs_diff(self.mech.cyl);
        if d > 0 {
            let s = self.curve.time_ns(d) + if write { self.settle_ns } else { 0 };
            self.stats.seeks += 1;
            self.stats.seek_cylinders += d;
            self.stats.seek_ns += s;
            t += s;
        } else if loc.head != self.mech.head {
            self.stats.seek_ns += self.geo.switch_ns;
            t += self.geo.switch_ns;
        }
        let (mut lba, mut left) = (lba, n);
        loop {
            let w = self.rot_wait(t, &loc);
            let k = left.min(loc.spt - loc.sector);
            let x = self.geo.span_ns(loc.sector, k, loc.spt);
            self.stats.rotation_ns += w;
            self.stats.transfer_ns += x;
            t += w + x;
            self.mech.cyl = loc.cyl;
            self.mech.head = loc.head;
            left -= k;
            lba += k;
            if left == 0 {
                self.mech.free_at = t;
                self.mech.next_page = lba / self.spp;
                return t;
            }
            loc = self.geo.locate(lba);
            self.stats.seek_ns += self.geo.switch_ns;
            t += self.geo.switch_ns;
        }
    }

    /// Stops the read-ahead at time `t` (the head is needed elsewhere) and keeps what it
    /// read as a buffer segment.
    fn freeze_stream(&mut self, t: u64) {
        if let Some(st) = self.mech.stream.take() {
            let p = st.pos(t, self.geo.track_period_ns());
            let lo = st.seg_start.max(p.saturating_sub(self.seg_len));
            if p > lo && self.lru_segments > 0 {
                self.mech.segments.truncate(self.lru_segments - 1);
                self.mech.segments.insert(0, (lo, p));
            }
            if p > st.s0 {
                let loc = self.geo.locate(p - 1);
                self.mech.cyl = loc.cyl;
                self.mech.head = loc.head;
            }
        }
    }

    /// Serves a read of sectors `s..e` at time `t` from the read-ahead stream, if it
    /// covers the start of the request; returns the completion time.
    fn stream_read(&mut self, t: u64, s: u64, e: u64, bytes: u64) -> Option<u64> {
        let period = self.geo.track_period_ns();
        let mut st = self.mech.stream?;
        let p = st.pos(t, period);
        let lo = st.seg_start.max(p.saturating_sub(self.seg_len));
        if s < lo || s > p {
            return None;
        }
        let want = (e + self.read_ahead).min(self.cap_sectors());
        let mut restart = 0;
        if want > st.limit {
            if p >= st.limit {
                // The read-ahead had stopped: it resumes when the next sector comes round.
                let loc = self.geo.locate(st.limit);
                restart = self.rot_wait(t, &loc);
                st.s0 = st.limit;
                st.t0 = t + restart;
                st.spt = loc.spt;
            }
            st.limit = want;
        }
        self.mech.stream = Some(st);
        let ready = if e <= p { t } else { st.ready_at(e, period) };
        let after_iface = t + self.iface_ns(bytes);
        let wait = ready.saturating_sub(after_iface);
        let rot = wait.min(restart);
        self.stats.rotation_ns += rot;
        self.stats.transfer_ns += wait - rot;
        if e <= p || restart == 0 {
            self.stats.buffer_hits += 1;
        }
        Some(after_iface.max(ready))
    }

    fn time_read(&mut self, page: u64, n: u64) -> u64 {
        let t0 = self.mech.clock;
        let bytes = n * self.page_size as u64;
        let (s, e) = (page * self.spp, (page + n) * self.spp);
        let t = t0 + self.hit_ns;
        self.background(t);
        let dirty = &self.mech.dirty;
        if !dirty.is_empty() && (page..page + n).all(|p| dirty.contains(&p)) {
            self.stats.buffer_hits += 1;
            return t + self.iface_ns(bytes);
        }
        if let Some(done) = self.stream_read(t, s, e, bytes) {
            return done;
        }
        if let Some(i) = self
            .mech
            .segments
            .iter()
            .position(|&(a, b)| a <= s && e <= b)
        {
            let seg = self.mech.segments.remove(i);
            self.mech.segments.insert(0, seg);
            self.stats.buffer_hits += 1;
            return t + self.iface_ns(bytes);
        }
        let t = t0 + self.miss_ns;
        self.background(t);
        let end = self.media(t, s, e - s, false);
        let limit = (e + self.read_ahead).min(self.cap_sectors());
        let spt = self.geo.locate(e.min(self.cap_sectors() - 1)).spt;
        self.mech.stream = Some(Stream {
            seg_start: s,
            s0: e,
            t0: end,
            limit,
            spt,
        });
        end
    }

    fn time_write(&mut self, page: u64, n: u64) -> u64 {
        let t0 = self.mech.clock;
        if n <= self.write_cache_pages {
            let mut t = t0 + self.write_ns;
            self.background(t);
            let dirty = &self.mech.dirty;
            let new = (page..page + n).filter(|p| !dirty.contains(p)).count() as u64;
            if self.mech.dirty.len() as u64 + new > self.write_cache_pages {
                // Buffer full: wait until write-back has made room.
                while self.mech.dirty.len() as u64 + new > self.write_cache_pages {
                    self.write_back_run(t);
                }
                t = t.max(self.mech.free_at);
            }
            self.mech.dirty.extend(page..page + n);
            if self.mech.dirty.len() as u64 > self.write_back_at {
                // Write-back starts once the data is in the buffer.
                self.mech.free_at = self.mech.free_at.max(t);
            }
            return t + self.iface_ns(n * self.page_size as u64);
        }
        let t = t0 + self.miss_ns;
        self.background(t);
        for p in page..page + n {
            self.mech.dirty.remove(&p);
        }
        self.media(t, page * self.spp, n * self.spp, true)
    }

    /// Lets the drive write dirty data back while the host is served from the buffer:
    /// runs start whenever the mechanics are free before `until` and more than half of
    /// the write cache is dirty (desktop drives hold writes back to coalesce and reorder
    /// them).
    fn background(&mut self, until: u64) {
        while self.mech.dirty.len() as u64 > self.write_back_at && self.mech.free_at < until {
            self.write_back_run(self.mech.free_at);
        }
    }

    /// Writes the next run of consecutive dirty pages back, in C-SCAN order (the first
    /// dirty page at or after the head's position, wrapping to the lowest), starting at
    /// `t` or when the mechanics are free.
    fn write_back_run(&mut self, t: u64) {
        let dirty = &self.mech.dirty;
        let Some(&first) = dirty
            .range(self.mech.next_page..)
            .next()
            .or_else(|| dirty.iter().next())
        else {
            return;
        };
        let mut n = 0;
        while self.mech.dirty.remove(&(first + n)) {
            n += 1;
        }
        self.media(t, first * self.spp, n * self.spp, true);
    }

    /// Writes all dirty data back; returns when the mechanics are done.
    fn drain(&mut self, t: u64) -> u64 {
        self.background(t);
        while !self.mech.dirty.is_empty() {
            self.write_back_run(t);
        }
        t.max(self.mech.free_at)
    }
}

fn splitmix64(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Device for SimHdd {
    fn page_size(&self) -> usize {
        self.page_size
    }

    fn capacity_pages(&self) -> u64 {
        self.capacity_pages
    }

    fn read(&mut self, page: u64, buf: &mut [u8]) -> Result<()> {
        let ps = self.page_size;
        let n = check_request(page, buf.len(), ps, self.capacity_pages)?;
        self.host.record_read(page, n, ps);
        for (i, chunk) in buf.chunks_exact_mut(ps).enumerate() {
            self.data.read(page + i as u64, chunk)?;
        }
        self.mech.clock = self.time_read(page, n);
        Ok(())
    }

    fn read_unused(&mut self, page: u64, pages: u64) -> Result<()> {
        let ps = self.page_size;
        let n = check_request(page, request_len(pages, ps)?, ps, self.capacity_pages)?;
        self.host.record_read(page, n, ps);
        self.mech.clock = self.time_read(page, n);
        Ok(())
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let ps = self.page_size;
        let n = check_request(page, data.len(), ps, self.capacity_pages)?;
        self.host.record_write(page, n, ps);
        for (i, chunk) in data.chunks_exact(ps).enumerate() {
            self.data.write(page + i as u64, chunk);
        }
        self.mech.clock = self.time_write(page, n);
        Ok(())
    }

    /// Waits for the dirty buffer to be written back (elevator order), then issues a
    /// cache flush.
    fn sync(&mut self) -> Result<()> {
        self.host.record_sync();
        let t = self.drain(self.mech.clock + self.hit_ns);
        self.mech.clock = t;
        Ok(())
    }

    /// Writes the dirty buffer back (paying for it) and empties the buffer.
    fn drop_caches(&mut self) -> Result<()> {
        self.host.record_cache_drop();
        let t = self.drain(self.mech.clock);
        self.freeze_stream(t);
        self.mech.segments.clear();
        self.mech.clock = t;
        Ok(())
    }

    fn device_ns(&self) -> u64 {
        self.mech.clock
    }

    /// One actuator serves requests one at a time: a request submitted while the drive is
    /// busy starts when it is free; one submitted later finds it idle until then (the
    /// platter turns and read-ahead continues meanwhile).
    fn submit_at(&mut self, at_ns: u64) -> Result<()> {
        self.mech.clock = self.mech.clock.max(at_ns);
        Ok(())
    }

    fn read_time_ignores_contents(&self) -> bool {
        true
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            kind: "hdd".into(),
            page_size: self.page_size,
            host: self.host,
            device_ns: self.mech.clock,
            hdd: Some(self.stats),
            ..Default::default()
        }
    }

    /// Saves data, clock, head, platter angle and buffer contents: a reopened drive
    /// continues exactly where this one stopped.
    fn persist(&mut self) -> Result<()> {
        match &self.state_path {
            Some(p) => {
                self.data.save(p)?;
                save_state_as(
                    p,
                    "hdd",
                    HDD_WRITE_OVERHEAD_FORMAT,
                    &SavedRef {
                        pages: Indexed(&self.data),
                        config: &self.config,
                        page_size: self.page_size,
                        mech: &self.mech,
                        host: &self.host,
                        stats: &self.stats,
                    },
                )
            }
            None => Ok(()),
        }
    }
}
