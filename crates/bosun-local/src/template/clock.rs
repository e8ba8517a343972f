//! `strftime_now(format)` for templates (Llama 3.x prints "Today Date: 26 Jul 2024").
//!
//! The clock is opt-in (invariant 19): unless it is on
//! ([`ChatTemplate::with_clock`](super::ChatTemplate::with_clock), from
//! `LocalOptions::clock`), every date a template sees is [`NEUTRAL_UNIX`],
//! 2024-01-01 00:00:00 UTC, a fixed date that says nothing about when bosun
//! runs (and keeps the rendered prompt, and so the prompt cache, the same
//! from day to day).
//!
//! Python's `datetime.now().strftime(format)` uses local time; this uses UTC
//! from the system clock, which needs no time-zone database and differs at
//! most by a day. Supported directives: `%Y %y %m %d %e %j %b %h %B %a %A %H %I
//! %M %S %p %F %T %%`; any other `%x` is written as is, as glibc does.

use bosun_core::calendar::{civil_from_days, days_from_civil};
use std::time::{SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// Seconds since the Unix epoch now (0 if the clock is before it).
pub(crate) fn now_unix() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|elapsed| i64::try_from(elapsed.as_secs()).ok())
        .unwrap_or(0)
}

/// The neutral date templates see while the clock is off: 2024-01-01
/// 00:00:00 UTC (a Monday).
pub(crate) const NEUTRAL_UNIX: i64 = 1_704_067_200;

/// The `strftime_now` template function: now with the clock on, the
/// neutral date otherwise.
pub(crate) fn strftime_now(format: &str, clock: bool) -> String {
    strftime(format, if clock { now_unix() } else { NEUTRAL_UNIX })
}

/// Formats the UTC time `unix_seconds` with a C `strftime` format.
pub(crate) fn strftime(format: &str, unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let seconds = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    // 1970-01-01 was a Thursday (index 3 from Monday).
    let weekday = usize::try_from((days + 3).rem_euclid(7)).unwrap_or(0);
    let month_name = MONTHS.get(usize::try_from(month - 1).unwrap_or(0)).copied().unwrap_or("");
    let weekday_name = WEEKDAYS.get(weekday).copied().unwrap_or("");
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };

    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(ch) = chars.next() {
        if ch != '%' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('e') => out.push_str(&format!("{day:2}")),
            Some('j') => out.push_str(&format!("{day_of_year:03}")),
            Some('b' | 'h') => out.push_str(month_name.get(..3).unwrap_or(month_name)),
            Some('B') => out.push_str(month_name),
            Some('a') => out.push_str(weekday_name.get(..3).unwrap_or(weekday_name)),
            Some('A') => out.push_str(weekday_name),
            Some('H') => out.push_str(&format!("{hour:02}")),
            Some('I') => out.push_str(&format!("{hour12:02}")),
            Some('M') => out.push_str(&format!("{minute:02}")),
            Some('S') => out.push_str(&format!("{second:02}")),
            Some('p') => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            Some('F') => out.push_str(&format!("{year}-{month:02}-{day:02}")),
            Some('T') => out.push_str(&format!("{hour:02}:{minute:02}:{second:02}")),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_llama_date_and_common_directives() {
        // 2024-07-26 13:05:09 UTC, a Friday.
        let t = 1_721_999_109;
        assert_eq!(strftime("%d %b %Y", t), "26 Jul 2024");
        assert_eq!(strftime("%Y-%m-%d %H:%M:%S", t), "2024-07-26 13:05:09");
        assert_eq!(strftime("%A %a %B %y %j %I%p %e %% %Q", t), "Friday Fri July 24 208 01PM 26 % %Q");
        assert_eq!(strftime("%F %T", 0), "1970-01-01 00:00:00");
        assert_eq!(strftime("%d %b %Y %a", 951_782_400), "29 Feb 2000 Tue");
        assert_eq!(strftime("%Y-%m-%d %j", -86_400), "1969-12-31 365");
        assert_eq!(strftime("%F %T %a", NEUTRAL_UNIX), "2024-01-01 00:00:00 Mon");
        assert_eq!(strftime_now("%F", false), "2024-01-01");
    }
}
