//! Tells the tests whether they are built with optimizations: the fixed
//! seed set shrinks in unoptimized builds (as `cargo test --workspace`
//! makes), and runs in full in optimized ones, debug assertions on or off.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sim_optimized)");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("OPT_LEVEL").is_ok_and(|l| l != "0") {
        println!("cargo::rustc-cfg=sim_optimized");
    }
}
