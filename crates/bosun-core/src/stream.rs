//! Delta reconciliation (invariant 2): streamed deltas must be a prefix of the
//! final text; the missing suffix is emitted before completion, so what a
//! consumer concatenated equals what history holds.

/// Accumulates streamed deltas of one kind (answer text or reasoning).
#[derive(Debug, Default)]
pub struct DeltaReconciler {
    streamed: String,
}

/// The streamed text is not a prefix of the final text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("streamed deltas ({streamed_len} bytes) are not a prefix of the final text ({final_len} bytes)")]
pub struct NonPrefix {
    /// Bytes streamed.
    pub streamed_len: usize,
    /// Bytes in the final text.
    pub final_len: usize,
}

impl DeltaReconciler {
    /// An empty reconciler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a streamed delta.
    pub fn push(&mut self, delta: &str) {
        self.streamed.push_str(delta);
    }

    /// Everything streamed so far.
    pub fn streamed(&self) -> &str {
        &self.streamed
    }

    /// The suffix of `final_text` still to emit, or an error when the
    /// streamed text is not its prefix.
    pub fn finish<'f>(&self, final_text: &'f str) -> Result<&'f str, NonPrefix> {
        final_text
            .strip_prefix(self.streamed.as_str())
            .ok_or(NonPrefix { streamed_len: self.streamed.len(), final_len: final_text.len() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_is_what_was_not_streamed() {
        let mut r = DeltaReconciler::new();
        r.push("Hel");
        assert_eq!(r.finish("Hello"), Ok("lo"));
        r.push("p");
        assert!(r.finish("Hello").is_err());
    }
}
