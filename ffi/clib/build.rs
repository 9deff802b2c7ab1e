//! Gives `libordo.so` a SONAME (`libordo.so.0`, the ABI's major version), so programs linked
//! against it record the ABI they were built for and `ldconfig` can manage the library.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libordo.so.0");
    }
}
