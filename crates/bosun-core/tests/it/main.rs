//! bosun-core's integration tests, one binary: the core invariants, the
//! turn loop's features (compaction, hooks, delegation, steering, limits,
//! spend), property tests, and the repository rules (`tidy`). `common` holds
//! the helpers they share.

mod common;

mod artifacts;
mod compaction;
mod compaction_properties;
mod delegation;
mod hooks;
mod invariants_authority;
mod invariants_batches;
mod invariants_clock;
mod invariants_journal;
mod invariants_journal_loss;
mod invariants_permission;
mod invariants_tool_policy;
mod invariants_tool_retry;
mod invariants_tools;
mod invariants_trust;
mod invariants_turns;
mod model_failures;
mod persistence;
mod plan;
mod properties;
mod repeated_calls;
mod session_options;
mod spend;
mod steering;
mod tidy;
mod tool_choice;
mod tool_source;
mod turn_limits;
