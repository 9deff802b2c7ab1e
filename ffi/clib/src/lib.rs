//! `libordo.a` and `libordo.so`: the C library of ordo. Every `ordo_*` function is `ordo-ffi`'s
//! (linked whole from its rlib); this crate adds only what a final C artifact needs and a Rust
//! program linking `ordo-ffi` must not get: without std, the panic handler and the unwinding
//! personality stub. The header is `ffi/include/ordo.h`.
#![no_std]

pub use ffi::*;

/// Without std, a panic (a bug in ordo: input never panics) aborts the process.
#[cfg(all(not(feature = "std"), not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe extern "C" {
        fn abort() -> !;
    }
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}

/// The prebuilt `libcore` (compiled with unwinding) references this symbol; a `no_std` build of
/// the C library aborts on panic, so nothing unwinds and it is never called.
#[cfg(all(not(feature = "std"), not(test)))]
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}
