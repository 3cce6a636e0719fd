//! Optimizer rules, one per file.

mod push_down_filter;
mod push_down_projection;

pub use push_down_filter::PushDownFilter;
pub use push_down_projection::PushDownProjection;
