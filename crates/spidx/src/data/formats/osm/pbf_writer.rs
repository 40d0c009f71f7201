//! A minimal OSM PBF writer for small fixtures (tests, examples, bug reports).
//!
//! No Rust crate in wide use writes OSM PBF, and the importer must be tested on real PBF
//! bytes, so this module encodes the format directly: an `OSMHeader` blob and one
//! `OSMData` blob holding plain (non-dense) nodes, ways and relations, uncompressed (`raw`
//! blobs are part of the format). The protobuf encoding is written by hand following the
//! public `fileformat.proto` / `osmformat.proto`. It holds everything in memory: meant for
//! thousands of elements, not for planet files.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// The type of a relation member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member {
    /// A way member (the only kind the tests' relations hold).
    Way,
}

type Tags = Vec<(u32, u32)>;
/// A relation: id, tags, members (type, member id, role string index).
type RelationRow = (i64, Tags, Vec<(Member, i64, u32)>);

/// Collects OSM elements and writes them as a `.osm.pbf` file.
#[derive(Debug, Default)]
pub(crate) struct PbfBuilder {
    strings: Vec<String>,
    index: HashMap<String, u32>,
    nodes: Vec<(i64, Tags, f64, f64)>,
    ways: Vec<(i64, Tags, Vec<i64>)>,
    relations: Vec<RelationRow>,
}

impl PbfBuilder {
    /// An empty extract.
    pub(crate) fn new() -> Self {
        let mut b = PbfBuilder::default();
        b.string(""); // index 0 is reserved as a delimiter
        b
    }

    fn string(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    fn tags(&mut self, tags: &[(&str, &str)]) -> Tags {
        tags.iter()
            .map(|(k, v)| (self.string(k), self.string(v)))
            .collect()
    }

    /// Adds a node at longitude `lon`, latitude `lat` (degrees, stored to 1e-7).
    pub(crate) fn node(&mut self, id: i64, lon: f64, lat: f64) -> &mut Self {
        self.nodes.push((id, Vec::new(), lon, lat));
        self
    }

    /// Adds a way through the nodes `refs` with `tags`.
    pub(crate) fn way(&mut self, id: i64, tags: &[(&str, &str)], refs: &[i64]) -> &mut Self {
        let t = self.tags(tags);
        self.ways.push((id, t, refs.to_vec()));
        self
    }

    /// Adds a relation with `tags` and `members` (type, id, role).
    pub(crate) fn relation(
        &mut self,
        id: i64,
        tags: &[(&str, &str)],
        members: &[(Member, i64, &str)],
    ) -> &mut Self {
        let t = self.tags(tags);
        let m = members
            .iter()
            .map(|(kind, mid, role)| (*kind, *mid, self.string(role)))
            .collect();
        self.relations.push((id, t, m));
        self
    }

    /// The encoded file.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut header = Vec::new();
        bytes_field(&mut header, 4, b"OsmSchema-V0.6");
        bytes_field(&mut header, 16, b"spidx pbf_writer");
        blob(&mut out, "OSMHeader", &header);

        let mut block = Vec::new();
        let mut table = Vec::new();
        for s in &self.strings {
            bytes_field(&mut table, 1, s.as_bytes());
        }
        bytes_field(&mut block, 1, &table);
        if !self.nodes.is_empty() {
            let mut group = Vec::new();
            for (id, tags, lon, lat) in &self.nodes {
                let mut n = Vec::new();
                varint_field(&mut n, 1, zigzag(*id));
                packed(&mut n, 2, tags.iter().map(|t| u64::from(t.0)));
                packed(&mut n, 3, tags.iter().map(|t| u64::from(t.1)));
                varint_field(&mut n, 8, zigzag((lat * 1e7).round() as i64));
                varint_field(&mut n, 9, zigzag((lon * 1e7).round() as i64));
                bytes_field(&mut group, 1, &n);
            }
            bytes_field(&mut block, 2, &group);
        }
        if !self.ways.is_empty() {
            let mut group = Vec::new();
            for (id, tags, refs) in &self.ways {
                let mut w = Vec::new();
                varint_field(&mut w, 1, *id as u64);
                packed(&mut w, 2, tags.iter().map(|t| u64::from(t.0)));
                packed(&mut w, 3, tags.iter().map(|t| u64::from(t.1)));
                packed(&mut w, 8, deltas(refs).map(zigzag));
                bytes_field(&mut group, 3, &w);
            }
            bytes_field(&mut block, 2, &group);
        }
        if !self.relations.is_empty() {
            let mut group = Vec::new();
            for (id, tags, members) in &self.relations {
                let mut r = Vec::new();
                varint_field(&mut r, 1, *id as u64);
                packed(&mut r, 2, tags.iter().map(|t| u64::from(t.0)));
                packed(&mut r, 3, tags.iter().map(|t| u64::from(t.1)));
                packed(&mut r, 8, members.iter().map(|m| u64::from(m.2)));
                let ids: Vec<i64> = members.iter().map(|m| m.1).collect();
                packed(&mut r, 9, deltas(&ids).map(zigzag));
                packed(
                    &mut r,
                    10,
                    // OSM's member types: 0 node, 1 way, 2 relation.
                    members.iter().map(|m| match m.0 {
                        Member::Way => 1,
                    }),
                );
                bytes_field(&mut group, 4, &r);
            }
            bytes_field(&mut block, 2, &group);
        }
        blob(&mut out, "OSMData", &block);
        out
    }

    /// Writes the encoded file to `path`.
    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut f = std::fs::File::create(path)?;
        f.write_all(&self.to_bytes())?;
        f.sync_all()
    }
}

fn deltas(v: &[i64]) -> impl Iterator<Item = i64> + '_ {
    let mut prev = 0i64;
    v.iter().map(move |&x| {
        let d = x - prev;
        prev = x;
        d
    })
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn varint_field(buf: &mut Vec<u8>, field: u64, v: u64) {
    varint(buf, field << 3);
    varint(buf, v);
}

fn bytes_field(buf: &mut Vec<u8>, field: u64, data: &[u8]) {
    varint(buf, (field << 3) | 2);
    varint(buf, data.len() as u64);
    buf.extend_from_slice(data);
}

fn packed(buf: &mut Vec<u8>, field: u64, values: impl Iterator<Item = u64>) {
    let mut body = Vec::new();
    for v in values {
        varint(&mut body, v);
    }
    if !body.is_empty() {
        bytes_field(buf, field, &body);
    }
}

/// Appends one file block: BlobHeader length (big-endian), BlobHeader, Blob with raw data.
fn blob(out: &mut Vec<u8>, kind: &str, data: &[u8]) {
    let mut b = Vec::new();
    varint_field(&mut b, 2, data.len() as u64); // raw_size
    bytes_field(&mut b, 1, data); // raw
    let mut h = Vec::new();
    bytes_field(&mut h, 1, kind.as_bytes());
    varint_field(&mut h, 3, b.len() as u64); // datasize
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(&b);
}
