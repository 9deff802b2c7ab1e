//! `libordo_ffi_no_std_proof.a`: ordo's C library built `no_std` (host backend only). It exports
//! the same `ordo_*` symbols as `libordo.a`; `main.c` beside this crate links it and runs
//! init -> alloc -> copy -> launch -> shutdown. The crate stops compiling (duplicate lang item
//! `panic_impl`) if std ever creeps into `ordo-ffi` or `ordo-core` without the `std` feature.
#![no_std]

pub use ordo::*;
