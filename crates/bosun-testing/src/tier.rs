//! The two test tiers and naming a test for re-running it in a child.
//!
//! `scripts/test` runs the default tier (what CI runs): every kind of check,
//! each crash point and conformance scenario once. `scripts/test --full`
//! sets `BOSUN_TEST_TIER=full`, and the tests that repeat a check (crash
//! runs per kill point, real-model variations) repeat it there.

/// The variable `scripts/test --full` sets to `full`.
pub const TIER_VARIABLE: &str = "BOSUN_TEST_TIER";

/// Whether this run is the full tier.
#[must_use]
pub fn full_tier() -> bool {
    std::env::var_os(TIER_VARIABLE).is_some_and(|value| value == "full")
}

/// `default` in the default tier, `full` in the full one.
#[must_use]
pub fn by_tier<T>(default: T, full: T) -> T {
    if full_tier() { full } else { default }
}

/// The name libtest knows a test by, from the `module_path!()` of the module
/// it is in and its function name: the crate's own name is not part of it
/// (`it::crash` + `crash_driver` is `crash::crash_driver`). What a test
/// passes to `--exact` to run another test of its binary in a child.
#[must_use]
pub fn test_path(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_owned(),
    }
}

/// The libtest name of the test function `name` in the calling module.
#[macro_export]
macro_rules! test_path {
    ($name:expr) => {
        $crate::tier::test_path(module_path!(), $name)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_path_leaves_out_the_crate_and_keeps_the_modules() {
        assert_eq!(test_path("it::crash", "crash_driver"), "crash::crash_driver");
        assert_eq!(test_path("it::a::b", "t"), "a::b::t");
        assert_eq!(test_path("crash", "crash_driver"), "crash_driver");
    }
}
