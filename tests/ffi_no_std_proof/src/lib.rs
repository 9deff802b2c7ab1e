//! `libordo_ffi_no_std_proof.a`: a Rust firmware's view of ordo's C ABI without std: a `no_std`
//! staticlib that links the `ordo-ffi` rlib (host backend only), exports the same `ordo_*`
//! symbols as `libordo.a`, and brings its own panic handler, as firmware does. `main.c` beside
//! this crate links it and runs init -> alloc -> copy -> launch -> shutdown. The crate stops
//! compiling (duplicate lang item `panic_impl`) if `ordo-ffi` ever defines a panic handler again,
//! or if std creeps into `ordo-ffi` or `ordo-core` without the `std` feature.
#![no_std]

pub use ordo_ffi::*;

/// The firmware's own panic handler (here: abort).
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        fn abort() -> !;
    }
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}

/// The prebuilt `libcore` (compiled with unwinding) references this symbol; this crate aborts
/// on panic, so it is never called.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
