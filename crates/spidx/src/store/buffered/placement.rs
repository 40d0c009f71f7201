//! Where a buffered store's log lives: the last pages of the node partition, split off as
//! a partition of their own so the log's I/O is counted and timed by the same device.

use crate::device::partition::Partition;
use crate::device::Device;
use crate::{Error, Result};

/// Splits `device` into the node pages and a log of `log_pages` pages at its end; `store`
/// names the store in errors.
pub fn split_log(
    device: Box<dyn Device>,
    log_pages: u64,
    store: &str,
) -> Result<(Box<dyn Device>, Box<dyn Device>)> {
    let cap = device.capacity_pages();
    if log_pages >= cap {
        return Err(Error::invalid(
            format!("{store} log size"),
            format!("the log needs {log_pages} pages but the node partition has only {cap}"),
        ));
    }
    let (nodes, log) = Partition::split(device, cap - log_pages)?;
    Ok((Box::new(nodes), Box::new(log)))
}
