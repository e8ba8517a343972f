//! placeholder: tool-call parsing (being written).
