//! Backoff delays: exponential with ±20% jitter and capped, or the server's
//! own wait exactly (the transport refuses one past
//! `ProviderConfig::max_retry_after` before asking here).

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use crate::config::RetryPolicy;

/// The wait before attempt `attempt + 1` (so `attempt` is 1 after the first
/// failure): the server's hint when given, as it asked (a server that says
/// 90 s and is retried after 60 s fails again), else the backoff.
pub fn delay(policy: &RetryPolicy, attempt: u32, hint: Option<Duration>) -> Duration {
    if let Some(hint) = hint {
        return hint;
    }
    let exponent = attempt.saturating_sub(1).min(16);
    let base = policy.base_delay.saturating_mul(1 << exponent).min(policy.max_delay);
    // A fresh RandomState is seeded from the OS: enough randomness for
    // jitter without a random-number dependency.
    let noise = RandomState::new().hash_one(attempt) % 401;
    let factor = 0.8 + (noise as f64) / 1000.0;
    base.mul_f64(factor).min(policy.max_delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_jitter_and_cap() {
        let policy = RetryPolicy::default().with_delays(Duration::from_millis(100), Duration::from_secs(1));
        for attempt in 1..=3 {
            let expected = 100.0 * f64::from(1 << (attempt - 1));
            let got = delay(&policy, attempt, None).as_secs_f64() * 1000.0;
            assert!(got >= expected * 0.8 - 1.0 && got <= expected * 1.2 + 1.0, "{attempt}: {got}");
        }
        assert!(delay(&policy, 30, None) <= Duration::from_secs(1));
        assert_eq!(delay(&policy, 1, Some(Duration::from_millis(300))), Duration::from_millis(300));
        assert_eq!(delay(&policy, 1, Some(Duration::from_secs(90))), Duration::from_secs(90));
    }
}
