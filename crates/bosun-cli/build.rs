//! With `dynamic-backends`, llama.cpp is a set of shared libraries: the
//! binary looks for them beside itself, so a packaged build is one directory
//! that can move (scripts/build-portable).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_DYNAMIC_BACKENDS").is_none() {
        return;
    }
    match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("macos") => println!("cargo:rustc-link-arg-bins=-Wl,-rpath,@executable_path"),
        Ok("windows") => {} // DLLs are found beside the executable anyway.
        _ => println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN"),
    }
}
