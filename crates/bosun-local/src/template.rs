//! placeholder: chat templates (being written).
