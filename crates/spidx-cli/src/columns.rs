//! The options that say where a table-like dataset file keeps its geometry and ids, and
//! which CRS a file that names none is in: one `clap` group flattened into `spidx dataset
//! import`, `spidx dataset info` and `spidx build` (a file of its own, so those commands'
//! files import it and not each other).

use anyhow::Result;
use spidx::data::{Columns, Crs};

/// Where the geometry and id of a table-like file are (CSV, GeoPackage, GeoParquet), and
/// the CRS of a file that names none: shared by `dataset import`, `dataset info` and `build`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ColumnArgs {
    /// CSV, GeoParquet: the geometry column (WKT or WKB; hex WKB in CSV). Default: found by
    /// name (wkt, geometry, geom, the_geom, wkb, shape), GeoParquet's primary column.
    #[arg(long, value_name = "NAME")]
    geometry_column: Option<String>,
    /// CSV: the x (longitude) column of point data (with --y-column). Default: found by
    /// name (x/y, lon/lat, lng/lat, long/lat, longitude/latitude, easting/northing).
    #[arg(long, value_name = "NAME", requires = "y_column")]
    x_column: Option<String>,
    /// CSV: the y (latitude) column of point data (with --x-column).
    #[arg(long, value_name = "NAME", requires = "x_column")]
    y_column: Option<String>,
    /// CSV, GeoPackage, GeoParquet: the id column (non-negative integers). Default: id or
    /// fid (a GeoPackage's integer primary key); without one, the row number.
    #[arg(long, value_name = "NAME")]
    id_column: Option<String>,
    /// GeoPackage: the feature table to read (needed when it holds several).
    #[arg(long, value_name = "TABLE")]
    layer: Option<String>,
    /// The CRS of a file that names none (CSV, WKT, WKB), e.g. EPSG:4326. A file naming
    /// another CRS is refused. spidx does not reproject.
    #[arg(long, value_name = "CRS")]
    crs: Option<String>,
}

impl ColumnArgs {
    /// The column options and the given CRS, for [`ReadOptions`].
    pub fn options(&self) -> Result<(Columns, Option<Crs>)> {
        let crs = self.crs.as_deref().map(Crs::parse).transpose()?;
        Ok((
            Columns {
                geometry: self.geometry_column.clone(),
                x: self.x_column.clone(),
                y: self.y_column.clone(),
                id: self.id_column.clone(),
                layer: self.layer.clone(),
            },
            crs,
        ))
    }
}
