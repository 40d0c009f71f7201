//! Reads the bytes of one WKB (or PostGIS EWKB) geometry from a stream without recursion,
//! checking its nesting depth and size before any recursive parser sees it.
//!
//! WKB is self-delimiting but not length-prefixed: a geometry's extent is known only by
//! walking its structure. This walker keeps an explicit stack of the collections it is
//! inside, so a hostile file (a collection nested thousands of levels deep, or a count of
//! four billion rings) ends in a clear error instead of a stack overflow or a huge
//! allocation. `geozero` then parses the bytes it returned.

use std::io::Read;

use super::{MAX_NESTING, MAX_RECORD_BYTES};

/// Why [`read_geometry`] stopped.
#[derive(Debug, PartialEq)]
pub(crate) enum ScanError {
    /// The stream ended inside the geometry (`at` bytes into it).
    Truncated { at: usize },
    /// The bytes are not WKB, or break a limit; the message says which.
    Invalid(String),
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Truncated { at } => {
                write!(f, "the geometry is truncated after {at} bytes")
            }
            ScanError::Invalid(m) => f.write_str(m),
        }
    }
}

/// Appends exactly `n` bytes of `r` to `out` (growing as data arrives, so a bogus count
/// cannot allocate more than the stream holds).
fn take(r: &mut impl Read, out: &mut Vec<u8>, n: u64) -> Result<(), ScanError> {
    if out.len() as u64 + n > MAX_RECORD_BYTES {
        return Err(ScanError::Invalid(format!(
            "the geometry is larger than {} MiB (the limit for one record)",
            MAX_RECORD_BYTES >> 20
        )));
    }
    let got = r
        .take(n)
        .read_to_end(out)
        .map_err(|e| ScanError::Invalid(format!("read error: {e}")))?;
    if (got as u64) < n {
        return Err(ScanError::Truncated { at: out.len() });
    }
    Ok(())
}

fn word(out: &[u8], at: usize, big_endian: bool) -> u32 {
    let w: [u8; 4] = out[at..at + 4].try_into().expect("4 bytes read");
    if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    }
}

/// Reads one geometry's bytes from `r` into `out` (cleared first). Returns `Ok(false)`
/// when the stream is already at its end (no byte read).
pub(crate) fn read_geometry(r: &mut impl Read, out: &mut Vec<u8>) -> Result<bool, ScanError> {
    out.clear();
    // Children still expected by each open collection, innermost last.
    let mut open: Vec<u32> = Vec::new();
    loop {
        let start = out.len();
        match take(r, out, 5) {
            // Nothing at all where a geometry would start: the end of the stream.
            Err(ScanError::Truncated { at: 0 }) => return Ok(false),
            other => other?,
        }
        let big_endian = match out[start] {
            0 => true,
            1 => false,
            b => {
                return Err(ScanError::Invalid(format!(
                    "byte order marker {b:#04x} at byte {start} is neither 0 nor 1; not WKB"
                )))
            }
        };
        let t = word(out, start + 1, big_endian);
        // EWKB flags (PostGIS) or ISO thousands (1000 Z, 2000 M, 3000 ZM).
        let (base, dims) = if t & 0xE000_0000 != 0 {
            if t & 0x2000_0000 != 0 {
                take(r, out, 4)?; // SRID
            }
            let z = u32::from(t & 0x8000_0000 != 0);
            let m = u32::from(t & 0x4000_0000 != 0);
            (t & 0x0FFF_FFFF, 2 + z + m)
        } else {
            let dims = match t / 1000 {
                0 => 2,
                1 | 2 => 3,
                3 => 4,
                _ => {
                    return Err(ScanError::Invalid(format!(
                        "geometry type {t} at byte {start} is not a WKB type"
                    )))
                }
            };
            (t % 1000, dims)
        };
        let coords = |n: u64| n * dims as u64 * 8;
        let count = |r: &mut _, out: &mut Vec<u8>| -> Result<u32, ScanError> {
            take(r, out, 4)?;
            Ok(word(out, out.len() - 4, big_endian))
        };
        match base {
            1 => take(r, out, coords(1))?,
            2 => {
                let n = count(r, out)?;
                take(r, out, coords(n as u64))?;
            }
            3 => {
                let rings = count(r, out)?;
                for _ in 0..rings {
                    let n = count(r, out)?;
                    take(r, out, coords(n as u64))?;
                }
            }
            4..=7 => {
                let n = count(r, out)?;
                if n > 0 {
                    if open.len() >= MAX_NESTING {
                        return Err(ScanError::Invalid(format!(
                            "geometries are nested more than {MAX_NESTING} levels deep (the limit)"
                        )));
                    }
                    open.push(n);
                    continue;
                }
            }
            other => {
                return Err(ScanError::Invalid(format!(
                    "geometry type {other} at byte {start} is not supported (only points, lines, polygons, their multi forms and collections)"
                )))
            }
        }
        // One geometry is complete: count it against the collections it ends.
        loop {
            match open.last_mut() {
                None => return Ok(true),
                Some(left) => {
                    *left -= 1;
                    if *left > 0 {
                        break;
                    }
                    open.pop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geozero::{CoordDimensions, ToWkb};

    fn wkb(wkt: &str) -> Vec<u8> {
        use wkt::TryFromWkt;
        let g = geo_types::Geometry::<f64>::try_from_wkt_str(wkt).unwrap();
        g.to_wkb(CoordDimensions::xy()).unwrap()
    }

    #[test]
    fn reads_exactly_one_geometry_each() {
        let a = wkb("GEOMETRYCOLLECTION(POINT(1 2),MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5))),LINESTRING(0 0,3 3))");
        let b = wkb("POLYGON((0 0,1 0,1 1,0 0),(0.1 0.1,0.2 0.1,0.2 0.2,0.1 0.1))");
        let c = wkb("GEOMETRYCOLLECTION EMPTY");
        let all = [a.clone(), b.clone(), c.clone()].concat();
        let mut r = &all[..];
        let mut out = Vec::new();
        for want in [&a, &b, &c] {
            assert!(read_geometry(&mut r, &mut out).unwrap());
            assert_eq!(&out, want);
        }
        assert!(!read_geometry(&mut r, &mut out).unwrap());
        // Truncated anywhere inside: a clear error.
        for cut in 1..a.len() {
            let e = read_geometry(&mut &a[..cut], &mut out).unwrap_err();
            assert!(matches!(e, ScanError::Truncated { .. }), "{cut}: {e}");
        }
    }

    #[test]
    fn deep_nesting_and_huge_counts_are_errors() {
        // 7000 nested collections, each holding the next.
        let mut deep = Vec::new();
        for _ in 0..7000 {
            deep.extend_from_slice(&[1, 7, 0, 0, 0, 1, 0, 0, 0]);
        }
        deep.extend_from_slice(&wkb("POINT(1 2)"));
        let e = read_geometry(&mut &deep[..], &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("nested more than"), "{e}");
        // A line claiming 4 billion points in a 20-byte file: truncated, not an allocation.
        let huge = [
            1u8, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        let e = read_geometry(&mut &huge[..], &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("larger than"), "{e}");
        let e = read_geometry(&mut &[7u8, 1, 0, 0, 0][..], &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("byte order"), "{e}");
    }
}
