//! Operators, one per file. Streaming operators ([`crate::Operator`]): filter, projection,
//! hash-join probe. Sinks ([`crate::Sink`]): collect, limit, sort, hash aggregate, join build.

pub mod accumulator;
mod accumulator_stats;
pub mod aggregate;
pub mod collect;
mod dense_merge;
mod few_groups;
pub mod filter;
mod group_ids;
mod group_partitions;
pub mod hash_join;
mod int_groups;
mod int_map;
mod join_index;
pub mod keys;
pub mod limit;
pub mod pair_filter;
mod par_sort;
mod pending_rows;
pub mod project;
pub mod range_index;
pub mod sort;
mod states;
pub mod window;
