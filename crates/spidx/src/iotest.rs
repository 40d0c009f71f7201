//! `iotest`: a small fio-like probe that drives a device with a pattern.
