//! Integers between bounds as GBNF: decimal digits without leading zeros,
//! split by length and then digit by digit, so `minimum: 1` rules out `0`
//! and `-3` while every allowed number stays writable.

use serde_json::{Map, Value};

/// Most digits a number has (as llama.cpp's `integral-part`).
const MAX_DIGITS: usize = 16;

/// An integer schema's bounds, both inclusive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Bounds {
    pub(super) min: Option<i128>,
    pub(super) max: Option<i128>,
}

impl Bounds {
    /// `minimum`/`exclusiveMinimum` and `maximum`/`exclusiveMaximum`,
    /// rounded inward when they are not whole.
    pub(super) fn of(schema: &Map<String, Value>) -> Self {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64).filter(|f| f.is_finite());
        let min = match (bound("minimum"), bound("exclusiveMinimum")) {
            (Some(min), _) => Some(min.ceil() as i128),
            (None, Some(min)) => Some(min.floor() as i128 + 1),
            (None, None) => None,
        };
        let max = match (bound("maximum"), bound("exclusiveMaximum")) {
            (Some(max), _) => Some(max.floor() as i128),
            (None, Some(max)) => Some(max.ceil() as i128 - 1),
            (None, None) => None,
        };
        Self { min, max }
    }
}

/// The GBNF of the integers within `bounds`, or `None` when unbounded (any
/// integer). An empty range allows nothing (`[^\x00-\x{10FFFF}]` can never
/// match), as the schema does.
pub(super) fn range(bounds: Bounds) -> Option<String> {
    let Bounds { min, max } = bounds;
    if min.is_none() && max.is_none() {
        return None;
    }
    if let (Some(min), Some(max)) = (min, max)
        && min > max
    {
        return Some(r"[^\x00-\x{10FFFF}]".to_owned());
    }
    let mut alternatives = Vec::new();
    // Negative numbers: "-" and the magnitudes from |max| (or 1) to |min|.
    if min.is_none_or(|m| m < 0) {
        let low = max.map_or(1, |m| if m < 0 { -m } else { 1 });
        let high = min.map(|m| -m);
        alternatives.push(format!("\"-\" ({})", non_negative(low as u128, high.map(|h| h as u128))));
    }
    if max.is_none_or(|m| m >= 0) {
        let low = min.map_or(0, |m| m.max(0)) as u128;
        alternatives.push(non_negative(low, max.map(|m| m as u128)));
    }
    Some(format!("({})", alternatives.join(" | ")))
}

/// The numbers from `low` to `high` (no `high`: up to [`MAX_DIGITS`]
/// digits) as GBNF alternatives.
fn non_negative(low: u128, high: Option<u128>) -> String {
    let low_digits = low.to_string().len();
    let high_digits = high.map_or(MAX_DIGITS, |h| h.to_string().len());
    let mut alternatives = Vec::new();
    for length in low_digits..=high_digits {
        let from = if length == low_digits { low } else { 10u128.pow(length as u32 - 1) };
        if high.is_none() && length > low_digits {
            // Every longer number, in one alternative.
            let min_rest = length - 1;
            let max_rest = MAX_DIGITS - 1;
            alternatives.push(format!("[1-9] [0-9]{{{min_rest},{max_rest}}}"));
            break;
        }
        let to = match high {
            Some(h) if length == high_digits => h,
            _ => 10u128.pow(length as u32) - 1,
        };
        alternatives.push(same_length(&from.to_string(), &to.to_string()));
    }
    alternatives.join(" | ")
}

/// The numbers from `from` to `to`, both written with the same number of
/// digits: their common prefix, then the first digit that differs, with
/// the rest free in between and bounded at either end.
fn same_length(from: &str, to: &str) -> String {
    if from == to {
        return format!("\"{from}\"");
    }
    let common = from.bytes().zip(to.bytes()).take_while(|(a, b)| a == b).count();
    let prefix = if common == 0 { String::new() } else { format!("\"{}\" ", &from[..common]) };
    let (from, to) = (&from[common..], &to[common..]);
    let (low, high) = (from.as_bytes()[0] - b'0', to.as_bytes()[0] - b'0');
    let rest = from.len() - 1;
    if rest == 0 {
        return format!("{prefix}[{low}-{high}]");
    }
    let (from_rest, to_rest) = (&from[1..], &to[1..]);
    let free = |digits: &str| format!("[{digits}] [0-9]{{{rest}}}");
    if from_rest.bytes().all(|b| b == b'0') && to_rest.bytes().all(|b| b == b'9') {
        return format!("{prefix}{}", free(&format!("{low}-{high}")));
    }
    let mut parts = vec![format!("\"{low}\" ({})", same_length(from_rest, &"9".repeat(rest)))];
    if high - low > 1 {
        parts.push(free(&format!("{}-{}", low + 1, high - 1)));
    }
    parts.push(format!("\"{high}\" ({})", same_length(&"0".repeat(rest), to_rest)));
    format!("{prefix}({})", parts.join(" | "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounded(min: Option<i128>, max: Option<i128>) -> String {
        range(Bounds { min, max }).unwrap_or_default()
    }

    #[test]
    fn no_bounds_is_any_integer() {
        assert_eq!(range(Bounds::default()), None);
    }

    #[test]
    fn a_minimum_of_one_rules_out_zero_and_negatives() {
        assert_eq!(bounded(Some(1), None), "([1-9] | [1-9] [0-9]{1,15})");
    }

    /// The expression as a regular expression: these use only literals,
    /// classes, counts, groups and `|`, written alike in both.
    fn matcher(gbnf: &str) -> regex::Regex {
        let pattern = format!("^(?:{})$", gbnf.replace(['"', ' '], ""));
        regex::Regex::new(&pattern).unwrap_or_else(|e| panic!("{gbnf}: {e}"))
    }

    /// Every integer in a window around the bounds is allowed exactly when
    /// it is within them, and no number is written with a leading zero.
    fn assert_exact(min: Option<i128>, max: Option<i128>) {
        let matcher = matcher(&bounded(min, max));
        for n in -1200i128..=1200 {
            let inside = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
            assert_eq!(
                matcher.is_match(&n.to_string()),
                inside,
                "{n} in {min:?}..={max:?}: {}",
                bounded(min, max)
            );
        }
        assert!(!matcher.is_match("007") && !matcher.is_match("-0"), "{}", bounded(min, max));
    }

    #[test]
    fn every_number_in_range_and_no_other() {
        for (min, max) in [
            (Some(0), Some(10)),
            (Some(15), Some(342)),
            (Some(100), Some(999)),
            (Some(7), None),
            (None, Some(-7)),
            (None, Some(25)),
            (Some(-1000), Some(-10)),
            (Some(-99), Some(1099)),
            (Some(5), Some(5)),
            (Some(0), None),
        ] {
            assert_exact(min, max);
        }
        let far = matcher(&bounded(Some(1), None));
        assert!(far.is_match("1234567890123456") && !far.is_match("12345678901234567"));
    }

    #[test]
    fn negative_bounds_take_a_minus_sign() {
        assert_eq!(bounded(Some(-5), Some(-2)), r#"("-" ([2-5]))"#);
        assert_eq!(bounded(Some(-3), Some(3)), r#"("-" ([1-3]) | [0-3])"#);
    }

    #[test]
    fn an_empty_range_allows_nothing() {
        assert_eq!(bounded(Some(3), Some(2)), r"[^\x00-\x{10FFFF}]");
    }

    #[test]
    fn exclusive_and_fractional_bounds_round_inward() {
        let schema = serde_json::json!({"exclusiveMinimum": 0, "maximum": 9.5});
        let bounds = Bounds::of(schema.as_object().unwrap_or(&Map::new()));
        assert_eq!(bounds, Bounds { min: Some(1), max: Some(9) });
    }
}
