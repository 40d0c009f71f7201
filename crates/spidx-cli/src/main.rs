//! The `spidx` command: a testbed for spatial indices on real and simulated devices.

fn main() {
    println!("spidx {}", env!("CARGO_PKG_VERSION"));
}
