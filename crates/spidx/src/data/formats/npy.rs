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
use std::io::{BufReader, Read, Write};
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

/// Reads a `.npy` file of vectors.
pub(crate) fn read(path: &Path, mut report: ImportReport) -> Result<Loaded> {
    let bad = |m: &dyn std::fmt::Display| corrupted(path, Format::Npy, m);
    let file = open_file(path)?;
    let npy = NpyFile::new(BufReader::with_capacity(1 << 20, file)).map_err(|e| bad(&e))?;
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
