//! NumPy `.npy`: the canonical file format for d-dimensional vectors.
//!
//! Why NPY: it is the format feature vectors usually come in (NumPy, PyTorch, FAISS tools
//! all read and write it), it is a documented, trivial header plus raw little-endian values
//! (so a million 10-d vectors load at disk speed), and `numpy.load` opens our files
//! directly. The `npyz` crate does the header parsing and element decoding.
//!
//! spidx writes float64 (`<f8`), shape `(N, D)`, C order. It reads any 1-D or 2-D array of
//! float64, float32 or integers in either byte order and either memory order (a 1-D array
//! is N one-dimensional vectors). Row `i` gets id `i`; rows holding NaN or infinite values
//! are dropped (`non_finite_vector`) and the rows after them move up.

use super::{corrupted, create_file, open_file, Format};
use crate::data::{Dataset, ImportReport, Issue, Loaded, Loc, Vectors};
use crate::{Error, Result};
use npyz::{NpyFile, Order, WriterBuilder};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Writes `vectors` as a float64 N×D `.npy` file.
pub(crate) fn write(path: &Path, vectors: &Vectors) -> Result<()> {
    let io = |e| Error::io(path, e);
    let mut out = create_file(path)?;
    let shape = [vectors.len() as u64, vectors.dims() as u64];
    let mut w = npyz::WriteOptions::<f64>::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut out)
        .begin_nd()
        .map_err(io)?;
    w.extend(vectors.as_slice().iter().copied()).map_err(io)?;
    w.finish().map_err(io)?;
    out.flush().map_err(io)
}

/// Reads every element as f64, trying the element types NumPy files commonly hold.
fn values<R: Read>(npy: NpyFile<R>) -> std::result::Result<Vec<f64>, String> {
    macro_rules! attempt {
        ($npy:expr, $($t:ty),*) => {{
            let npy = $npy;
            $(
                let npy = match npy.try_data::<$t>() {
                    Ok(reader) => {
                        return reader
                            .map(|v| v.map(|x| x as f64))
                            .collect::<std::io::Result<Vec<f64>>>()
                            .map_err(|e| match e.kind() {
                                std::io::ErrorKind::UnexpectedEof => {
                                    "the data ends before the shape says; the file is truncated".to_string()
                                }
                                _ => e.to_string(),
                            });
                    }
                    Err(npy) => npy,
                };
            )*
            npy
        }};
    }
    let npy = attempt!(npy, f64, f32, i64, i32, i16, i8, u64, u32, u16, u8);
    Err(format!(
        "element type {} is not supported; use float64, float32 or integers",
        npy.dtype().descr()
    ))
}

/// The largest header spidx reads (NumPy itself refuses headers past 10,000 bytes unless
/// told otherwise; a 2-D array's header is about 128 bytes).
pub(crate) const MAX_HEADER: u64 = 1 << 16;

/// Checks the preamble and the header of the `.npy` file at `path` (of `file_len` bytes)
/// before the `npyz` crate reads them, since it allocates the header length the file states
/// and multiplies the shape's dimensions unchecked: the header length within the file and
/// [`MAX_HEADER`], the shape's product computed with checked arithmetic and at most one
/// element per data byte. Returns the data bytes after the header.
fn check_header(path: &Path, file_len: u64) -> Result<u64> {
    let bad = |m: &dyn std::fmt::Display| corrupted(path, Format::Npy, m);
    let mut f = open_file(path)?;
    let mut pre = [0u8; 12];
    let got = read_up_to(&mut f, &mut pre).map_err(|e| Error::io(path, e))?;
    if got < 10 || &pre[..6] != b"\x93NUMPY" {
        return Err(bad(&"not a NumPy file (no \\x93NUMPY magic)"));
    }
    let (len_bytes, header_len) = match pre[6] {
        1 => (2u64, u64::from(u16::from_le_bytes([pre[8], pre[9]]))),
        2 | 3 if got >= 12 => (
            4,
            u64::from(u32::from_le_bytes([pre[8], pre[9], pre[10], pre[11]])),
        ),
        v => return Err(bad(&format_args!("format version {v} is not 1, 2 or 3"))),
    };
    let start = 8 + len_bytes;
    let room = file_len.saturating_sub(start);
    if header_len > room || header_len > MAX_HEADER {
        return Err(bad(&format_args!(
            "header length {header_len} exceeds {} (the file's {room} bytes after the \
             preamble, or the limit of {MAX_HEADER} bytes)",
            room.min(MAX_HEADER)
        )));
    }
    let mut text = vec![0u8; header_len as usize];
    f.seek(SeekFrom::Start(start))
        .and_then(|_| f.read_exact(&mut text))
        .map_err(|e| Error::io(path, e))?;
    let data = room - header_len;
    let text = String::from_utf8_lossy(&text);
    let shape = shape_of(&text).ok_or_else(|| bad(&"the header has no readable 'shape' tuple"))?;
    let mut n: u64 = 1;
    for d in &shape {
        n = n.checked_mul(*d).ok_or_else(|| {
            bad(&format_args!(
                "shape {shape:?}: its {} elements overflow a 64-bit count",
                shape
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(" × ")
            ))
        })?;
    }
    if n > data {
        return Err(bad(&format_args!(
            "shape {shape:?} declares {n} elements but only {data} bytes of data follow the \
             header; the file is truncated or its header is damaged"
        )));
    }
    Ok(data)
}

/// The integers of the `'shape'` tuple of a header's dictionary text.
fn shape_of(text: &str) -> Option<Vec<u64>> {
    let at = text.find("'shape'").or_else(|| text.find("\"shape\""))?;
    let rest = &text[at + 7..];
    let open = rest.find('(')?;
    if !rest[..open]
        .trim()
        .trim_start_matches(':')
        .trim()
        .is_empty()
    {
        return None;
    }
    let close = rest[open..].find(')')? + open;
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.trim_end_matches(['L', 'l']).parse::<u64>().ok())
        .collect()
}

/// Reads until `buf` is full or the end of the file; the bytes read.
fn read_up_to(f: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Reads a `.npy` file of vectors.
pub(crate) fn read(path: &Path, mut report: ImportReport) -> Result<Loaded> {
    let bad = |m: &dyn std::fmt::Display| corrupted(path, Format::Npy, m);
    let file = open_file(path)?;
    let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let data_bytes = check_header(path, file_len)?;
    let npy = NpyFile::new(BufReader::with_capacity(1 << 20, file)).map_err(|e| bad(&e))?;
    let need = npy
        .dtype()
        .num_bytes()
        .and_then(|b| (b as u64).checked_mul(npy.len()));
    if need.is_none_or(|n| n > data_bytes) {
        return Err(bad(&format_args!(
            "the header declares {} elements of {} bytes but only {data_bytes} bytes of data \
             follow it; the file is truncated or its header is damaged",
            npy.len(),
            npy.dtype()
                .num_bytes()
                .map_or("variable".to_string(), |b| b.to_string())
        )));
    }
    let shape = npy.shape().to_vec();
    let order = npy.order();
    let (rows, dims) = match shape[..] {
        [n] => (n as usize, 1usize),
        [n, d] => (n as usize, d as usize),
        _ => {
            return Err(bad(&format_args!(
                "shape {shape:?}: expected a 2-D array of N vectors × D dimensions"
            )))
        }
    };
    if dims == 0 {
        return Err(bad(&"vectors with 0 dimensions"));
    }
    let mut data = values(npy).map_err(|m| bad(&m))?;
    if order == Order::Fortran && dims > 1 {
        let mut c = vec![0.0; data.len()];
        for (i, v) in data.iter().enumerate() {
            let (col, row) = (i / rows, i % rows);
            c[row * dims + col] = *v;
        }
        data = c;
    }
    report.records_read = rows as u64;
    let mut kept = Vec::with_capacity(data.len());
    for (i, row) in data.chunks_exact(dims).enumerate() {
        if let Some(v) = row.iter().find(|v| !v.is_finite()) {
            report.note(
                Issue::NonFiniteVector,
                Loc::Row(i as u64),
                &format!("value {v}"),
            );
        } else {
            kept.extend_from_slice(row);
            report.kept("vector");
        }
    }
    Ok(Loaded {
        dataset: Dataset::Vectors(Vectors::new(dims, kept)?),
        report,
    })
}
