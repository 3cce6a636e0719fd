//! Hash aggregation as a sink. Each morsel is grouped on the worker that reads it, one of two
//! ways, chosen from its first batch's keys (so by the data, never by the workers):
//! - few distinct keys: a partial group table (keys interned in first-seen order, one
//!   accumulator slot per group; rows find their group by the key values where the keys'
//!   types allow, see [`super::group_ids`]), sized from the first batch's distinct keys and
//!   merged with the other partials in morsel order;
//! - nearly every row a new key: its rows are scattered by key hash into partitions, each
//!   reduced once in `finish` (see [`super::group_partitions`]); or, when the first batch is
//!   small or the key is one integer-like column, kept as they came for the merge to group
//!   (see [`super::pending_rows`]).
//!
//! Output groups appear in order of first appearance in the input, and every group's states
//! combine in morsel order, so float sums add in a data-determined order whatever the number
//! of workers. When the partials hold many groups, or any morsel was scattered, the merge is
//! split by key hash and runs on the workers; it combines every group's states in the same
//! order as the serial merge, so the two give the same bits. One integer key over a narrow
//! range with rows kept is merged by key offset into arrays instead ([`super::dense_merge`]),
//! again combining every group's states in that order.

use morsel_planner::AggFunc;
use morsel_storage::{Batch, Column, DataType, ScalarValue, SchemaRef, Utf8Column};

use super::accumulator::{with_args, Accumulator};
use super::few_groups::FewGroups;
use super::group_ids::{
    for_each_str_hash, intern_int, multi_key_columns, IntIds, MultiIds, StrIds,
};
use super::group_partitions::{ScatteredRows, PARTITIONS};
use super::int_groups::{int_bounds, IntTable};
use super::int_map::FIBONACCI;
use super::keys::{
    decode_keys, for_each_int, hash_key, is_int_column, KeyInterner, KeyList, RowKeys,
};
use super::pending_rows::{LocalIds, PendingRows};
use super::states::Args;
use crate::error::{ExecError, ExecResult};
use crate::expr::PhysExpr;
use crate::scheduler::{parallel_map, Sink};

/// One aggregate call: function, compiled argument (none for `count(*)`) and its type.
pub struct AggSpec {
    pub func: AggFunc,
    pub arg: Option<PhysExpr>,
    pub arg_type: DataType,
    pub distinct: bool,
    /// The constant second argument, if the function takes one.
    pub constant: Option<ScalarValue>,
    /// The second argument column of the aggregates that take two (arg_min's key, the x of
    /// `corr(y, x)`, the FILTER mask of first / last).
    pub second: Option<PhysExpr>,
}

impl AggSpec {
    /// The argument columns a batch evaluates for this aggregate, in slot order (the first
    /// as `None` for `count(*)`): see [`with_args`].
    fn evaluate(&self, batch: &Batch, out: &mut Vec<Option<Column>>) -> ExecResult<()> {
        out.push(self.arg.as_ref().map(|e| e.evaluate(batch)).transpose()?);
        if let Some(second) = &self.second {
            out.push(Some(second.evaluate(batch)?));
        }
        Ok(())
    }
}

pub struct AggregateSink {
    pub group: Vec<PhysExpr>,
    pub key_types: Vec<DataType>,
    pub aggs: Vec<AggSpec>,
    pub schema: SchemaRef,
    /// Workers for the partitioned merge.
    pub threads: usize,
    /// Groups merged by partition are put back in first-seen order; without, they stay in
    /// partition order (for an aggregate whose output order nothing observes).
    pub keep_order: bool,
    /// The group keys whose values alone choose a group's hash partition (`None`: all of
    /// them): an aggregate above that groups by those keys then reads each partition's
    /// batch as whole groups of its own.
    pub partition_keys: Option<Vec<bool>>,
    /// Each input morsel holds whole groups (it is one partition of an aggregate below,
    /// partitioned by this one's keys): a group table per morsel, never scattered, and the
    /// tables' groups handed on in morsel order, which is first-seen order, with no merge.
    pub whole_groups: bool,
}

/// The partitioned merge runs when the partials hold at least this many groups in all, and
/// at least this many distinct ones.
pub const PARTITIONED_MERGE_GROUPS: usize = 1 << 16;

/// A morsel is scattered when the distinct keys of its first batch are estimated at no fewer
/// than 1 in this many rows.
const SCATTER_DISTINCT_PER_ROWS: usize = 2;

/// Bits of the sketch that estimates a batch's distinct keys (linear counting: keys set
/// bits by hash; the share of bits left clear tells how many distinct keys there were).
const SKETCH_BITS: usize = 1 << 15;

/// The share of distinct keys among a first batch's first `4 * MIN_SCATTER_ROWS` rows that
/// decides for scattering without reading the rest.
const MOSTLY_DISTINCT: f64 = 0.75;

/// A first batch of fewer rows is not scattered (its rows are kept for the merge, or grouped
/// in a table); also the rows after which the keys seen so far are first checked.
pub(super) const MIN_SCATTER_ROWS: usize = 1024;

/// A batch's group keys, as the grouping paths read them.
pub enum BatchKeys<'a> {
    /// One integer-like key column, grouped by value.
    Int(&'a Column),
    /// One text key column, grouped by its bytes.
    Str(&'a Utf8Column),
    /// Two to four integer-like or text key columns, grouped by their values' ids.
    Columns(&'a [Column]),
    /// Encoded keys and their hashes.
    Encoded(RowKeys, Vec<u64>),
}

impl BatchKeys<'_> {
    pub fn rows(&self) -> usize {
        match self {
            BatchKeys::Int(c) => c.len(),
            BatchKeys::Str(c) => c.len(),
            BatchKeys::Columns(cols) => cols.first().map_or(0, Column::len),
            BatchKeys::Encoded(_, hashes) => hashes.len(),
        }
    }
}

/// A morsel's share of the work: a group table (by value for one integer-like key), its
/// rows scattered by key hash, or its rows kept for the merge to group.
pub enum Partial {
    /// A global aggregate's states over one morsel, one group each (`None`: no rows), kept
    /// apart from the tables so that a morsel costs no key table (at 10M rows, 1116 morsels'
    /// tables took ~0.6 ms of a 4 ms `SUM` to make, merge and free).
    Global(Option<Vec<Accumulator>>),
    Table(GroupTable),
    Ints(IntTable),
    Rows(ScatteredRows),
    Pending(PendingRows),
}

impl Partial {
    fn is_scattered(&self) -> bool {
        matches!(self, Partial::Rows(_))
    }

    /// Groups held by a table, or rows kept for the merge (a group each at most); none for
    /// scattered rows.
    pub(super) fn table_groups(&self) -> usize {
        match self {
            Partial::Global(states) => usize::from(states.is_some()),
            Partial::Table(t) => t.keys.len(),
            Partial::Ints(t) => t.len(),
            Partial::Rows(_) => 0,
            Partial::Pending(r) => r.rows(),
        }
    }
}

/// Groups seen so far: interned keys (their values are decoded from the key bytes when
/// finishing) and one accumulator per aggregate.
pub struct GroupTable {
    pub(super) keys: KeyInterner,
    pub(super) accs: Vec<Accumulator>,
    /// For one integer-like group key: its interned ids by value, so that rows look their
    /// group up without encoding and hashing bytes.
    pub(super) ints: IntIds,
    /// For one text group key: its interned ids by the string's bytes (not encoded).
    strs: Box<StrIds>,
    /// For two to four integer-like or text keys: ids by the values' own ids.
    multi: Box<MultiIds>,
}

impl GroupTable {
    /// A table of the interned `keys` with states `accs`, whose integer keys' ids are `ints`.
    pub(super) fn from_parts(keys: KeyInterner, accs: Vec<Accumulator>, ints: IntIds) -> Self {
        Self {
            keys,
            accs,
            ints,
            strs: Box::default(),
            multi: Box::default(),
        }
    }

    /// Makes room for `groups` groups of keys like `keys` (a morsel's table would otherwise
    /// grow, rehashing, from empty: a tenth of grouping by l_orderkey).
    fn reserve(&mut self, groups: usize, keys: &BatchKeys) {
        // Encoded keys tell their bytes per row; other keys' tables hold few bytes per group
        // or none (integers interned by value), and grow as they need.
        let bytes = match keys {
            BatchKeys::Encoded(k, _) if !k.is_empty() => k.bytes_len() / k.len() * groups,
            _ => 0,
        };
        self.keys.reserve(groups, bytes);
        match keys {
            BatchKeys::Int(_) => self.ints.reserve(groups),
            BatchKeys::Str(_) => self.strs.reserve(groups),
            _ => {}
        }
    }

    /// Adds a batch's rows: `args` are each aggregate's argument.
    pub(super) fn update(&mut self, keys: &BatchKeys, args: &[Option<Column>]) -> ExecResult<()> {
        let ids = self.ids(keys);
        update_accs(&mut self.accs, &ids, self.keys.len(), args)
    }

    /// Each row's group id, interning keys not seen before (no state is touched).
    pub(super) fn ids(&mut self, keys: &BatchKeys) -> Vec<u32> {
        let intern_all = |keys: &mut KeyInterner, encoded: &RowKeys, hashes: &[u64]| {
            hashes
                .iter()
                .enumerate()
                .map(|(i, &hash)| keys.intern(encoded.key(i), hash).0)
                .collect()
        };
        match keys {
            BatchKeys::Encoded(encoded, hashes) => intern_all(&mut self.keys, encoded, hashes),
            BatchKeys::Int(col) => {
                let (ty, keys) = (col.data_type(), &mut self.keys);
                self.ints.ids(col, |v| intern_int(keys, v, ty))
            }
            BatchKeys::Str(col) => self.strs.ids(col, &mut self.keys),
            BatchKeys::Columns(cols) => match self.multi.ids(cols, &mut self.keys) {
                Some(ids) => ids,
                None => {
                    let (encoded, hashes) = encode_with_hashes(cols);
                    intern_all(&mut self.keys, &encoded, &hashes)
                }
            },
        }
    }
}

/// Adds a batch's rows, whose group ids are `ids` (of `groups` groups in all), to each
/// aggregate's states: by lanes when the batch has few groups (see [`FewGroups`]).
pub(super) fn update_accs(
    accs: &mut [Accumulator],
    ids: &[u32],
    groups: usize,
    args: &[Option<Column>],
) -> ExecResult<()> {
    let few = FewGroups::of(ids, groups);
    for (acc, args) in with_args(accs, args) {
        acc.resize(groups);
        if let Some(few) = &few {
            if acc.update_few(few, ids, args.first)? {
                continue;
            }
        }
        acc.update(ids, args)?;
    }
    Ok(())
}

/// Combines a partial's states `parts` into `accs`: the partial's group g into group
/// `mapping[g]` of `groups` groups in all. `parts` are only fit to be reset after (see
/// [`Accumulator::merge`]).
pub(super) fn merge_accs(
    accs: &mut [Accumulator],
    parts: &mut [Accumulator],
    groups: usize,
    mapping: &[u32],
) -> ExecResult<()> {
    for (acc, part) in accs.iter_mut().zip(parts) {
        acc.resize(groups);
        acc.merge(part, mapping)?;
    }
    Ok(())
}

/// Whether a morsel should scatter its rows (or keep them for the merge, when its first batch
/// has fewer than [`MIN_SCATTER_ROWS`]), from its first batch's keys: when their distinct
/// count over all rows is at least half the rows. The keys are checked after
/// [`MIN_SCATTER_ROWS`] rows and four times that, each time with the keys among the first
/// half of the rows read ([`expected_groups`]): fewer than half the rows read distinct, or
/// under a quarter of all rows expected distinct, settles it for a table (sized for the
/// expected keys) without reading the rest. Past the second check, keys at least
/// [`MOSTLY_DISTINCT`] distinct settle it for scattering: reading the rest (the keys' first
/// read from memory, 2.4 ns a row, suite `high100k` at 10M rows) would only raise
/// `min_groups`, a lower bound either way, and which way a morsel takes never changes its
/// bits (see [`super::pending_rows`]). Only the batch read whole counts its keys exactly.
fn many_groups(keys: &BatchKeys) -> Grouping {
    let rows = keys.rows();
    let mut sketch = Sketch(vec![0u64; SKETCH_BITS / 64]);
    let mut seen = 0;
    // Distinct keys among the first half of the rows read by the next check that decides.
    let mut half = 0.0;
    let checks = [
        MIN_SCATTER_ROWS / 2,
        MIN_SCATTER_ROWS,
        2 * MIN_SCATTER_ROWS,
        4 * MIN_SCATTER_ROWS,
        rows,
    ];
    for upto in checks {
        let upto = upto.min(rows);
        if upto <= seen {
            continue;
        }
        match keys {
            BatchKeys::Encoded(_, hashes) => {
                hashes[seen..upto].iter().for_each(|&h| sketch.set(h));
            }
            BatchKeys::Int(col) => {
                let part = col.slice(seen, upto - seen);
                for_each_int(&part, |_, v| sketch.set(int_hash(v)));
            }
            BatchKeys::Columns(cols) => {
                // Each column's value hashes mixed into the rows' (no key is encoded).
                let mut hashes = vec![0u64; upto - seen];
                for col in *cols {
                    let part = col.slice(seen, upto - seen);
                    let mut mix = |i: usize, h: u64| {
                        hashes[i] = (hashes[i].rotate_left(29) ^ h).wrapping_mul(FIBONACCI);
                    };
                    match &part {
                        Column::Utf8(s) => for_each_str_hash(s, 0..s.len(), 0, mix),
                        other => for_each_int(other, |i, v| mix(i, int_hash(v))),
                    }
                }
                hashes.iter().for_each(|&h| sketch.set(h));
            }
            BatchKeys::Str(col) => {
                for_each_str_hash(col, seen..upto, FIBONACCI, |_, h| sketch.set(h));
            }
        }
        seen = upto;
        let distinct = sketch.distinct();
        if seen < rows && seen != MIN_SCATTER_ROWS && seen != 4 * MIN_SCATTER_ROWS {
            half = distinct;
            continue;
        }
        // Fewer than half the rows read distinct, or a quarter of the batch's expected: the
        // estimate is less sure than the count (its sketch's error grows in extrapolating),
        // so it decides only with room to spare.
        let groups = expected_groups(rows, seen, half, distinct);
        if distinct * (SCATTER_DISTINCT_PER_ROWS as f64) < seen as f64
            || groups * ((2 * SCATTER_DISTINCT_PER_ROWS) as f64) < rows as f64
        {
            return Grouping::Table {
                groups: groups as usize,
            };
        }
        if seen == 4 * MIN_SCATTER_ROWS && distinct >= seen as f64 * MOSTLY_DISTINCT {
            break;
        }
    }
    match rows < MIN_SCATTER_ROWS {
        // The sketch covered the whole batch: each of its set bits is a distinct key.
        true => Grouping::Pending {
            min_groups: sketch.bits_set(),
        },
        false => Grouping::Scatter {
            min_groups: sketch.bits_set(),
        },
    }
}

/// A morsel of whole groups is grouped in a table whatever its keys (sized as
/// [`many_groups`] estimates): nothing is left to merge across morsels.
fn in_a_table(keys: &BatchKeys) -> Grouping {
    match many_groups(keys) {
        Grouping::Table { groups } => Grouping::Table { groups },
        Grouping::Scatter { min_groups } | Grouping::Pending { min_groups } => {
            Grouping::Table { groups: min_groups }
        }
    }
}

/// The distinct keys expected in a batch of `rows` rows whose first `seen` rows hold
/// `distinct` (and the first half of those `half`): the rows still to come, in windows of
/// `seen / 2`, bring new keys at the second half's rate, changed from window to window as
/// it changed from the first half to the second. Keys drawn at random from a set slow down
/// so, geometrically (a thousand strings over a 16K-row morsel: about a thousand, where
/// the rate over all rows read would say over ten thousand); keys in runs keep their rate.
fn expected_groups(rows: usize, seen: usize, half: f64, distinct: f64) -> f64 {
    let later = (distinct - half).max(0.0);
    if seen >= rows || half <= 0.0 {
        return distinct;
    }
    let ratio = (later / half).min(1.0);
    let windows = (rows - seen) as f64 / (seen / 2) as f64;
    let rest = match ratio < 1.0 {
        true => later * ratio * (1.0 - ratio.powf(windows)) / (1.0 - ratio),
        false => later * windows,
    };
    (distinct + rest).min(rows as f64)
}

/// Every row's encoded key over `cols`, and its hash.
pub(super) fn encode_with_hashes(cols: &[Column]) -> (RowKeys, Vec<u64>) {
    let rows = cols.first().map_or(0, Column::len);
    let encoded = RowKeys::encode(cols, rows);
    let hashes = (0..rows).map(|i| hash_key(encoded.key(i))).collect();
    (encoded, hashes)
}

/// How a morsel is grouped, decided from its first batch.
#[derive(Clone, Copy, Debug)]
enum Grouping {
    /// Its rows are scattered by key hash (kept for the merge when its key is one
    /// integer-like column: see [`super::dense_merge`]); its first batch has at least
    /// `min_groups` distinct keys.
    Scatter { min_groups: usize },
    /// Its rows are kept for the merge; its first batch has at least `min_groups` distinct
    /// keys.
    Pending { min_groups: usize },
    /// A group table, sized for about this many groups.
    Table { groups: usize },
}

/// One bit per hash value's top bits.
struct Sketch(Vec<u64>);

impl Sketch {
    fn set(&mut self, hash: u64) {
        let bit = (hash >> (64 - SKETCH_BITS.trailing_zeros())) as usize;
        self.0[bit / 64] |= 1 << (bit % 64);
    }

    fn bits_set(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The estimated number of distinct hashes set (linear counting).
    fn distinct(&self) -> f64 {
        let clear = (SKETCH_BITS - self.bits_set()).max(1) as f64;
        SKETCH_BITS as f64 * (SKETCH_BITS as f64 / clear).ln()
    }
}

/// An integer key's hash for a sketch: one multiplication, whose top bits spread even
/// consecutive values.
pub(super) fn int_hash(v: Option<i64>) -> u64 {
    v.map_or(FIBONACCI, |x| (x as u64).wrapping_mul(FIBONACCI))
}

impl AggregateSink {
    pub(super) fn new_table(&self) -> ExecResult<GroupTable> {
        Ok(GroupTable {
            keys: KeyInterner::new(),
            accs: self.new_accs()?,
            ints: IntIds::default(),
            strs: Box::default(),
            multi: Box::default(),
        })
    }

    pub(super) fn new_accs(&self) -> ExecResult<Vec<Accumulator>> {
        self.aggs
            .iter()
            .map(|a| {
                Accumulator::new(
                    a.func,
                    a.arg_type,
                    a.distinct,
                    a.constant.as_ref(),
                    a.second.is_some(),
                )
            })
            .collect()
    }

    /// The output batch of a merged table: decoded keys, then each aggregate's values.
    pub(super) fn output(&self, keys: &KeyList, accs: Vec<Accumulator>) -> ExecResult<Vec<Column>> {
        let columns = if self.group.is_empty() {
            Vec::new()
        } else {
            decode_keys(keys, &self.key_types)?
        };
        self.output_columns(columns, keys.len(), accs)
    }

    /// The output columns of `groups` merged groups: their key columns, then each
    /// aggregate's values.
    pub(super) fn output_columns(
        &self,
        mut columns: Vec<Column>,
        groups: usize,
        accs: Vec<Accumulator>,
    ) -> ExecResult<Vec<Column>> {
        for mut acc in accs {
            acc.resize(groups);
            columns.push(acc.finish()?);
        }
        if columns.len() != self.schema.len() {
            return Err(ExecError::Internal(
                "aggregate output does not match its schema".into(),
            ));
        }
        Ok(columns)
    }
}

impl Sink for AggregateSink {
    type Partial = Partial;
    type Output = Vec<Batch>;

    fn details(&self) -> Vec<String> {
        let mut d = vec![if self.group.is_empty() {
            "global aggregate: one partial per morsel, merged in morsel order".to_string()
        } else {
            format!(
                "hash aggregate on {} key(s), groups in {}: per morsel a group \
                 table, or, when its keys are mostly distinct (est. 1 in \
                 {SCATTER_DISTINCT_PER_ROWS} rows), its rows scattered into {PARTITIONS} \
                 partitions by key hash (kept for the merge under {MIN_SCATTER_ROWS} rows, \
                 or with one integer key); merged in morsel order, by partition in parallel \
                 past {PARTITIONED_MERGE_GROUPS} groups (by key offset into arrays for one \
                 integer key over a narrow range)",
                self.group.len(),
                match self.keep_order {
                    true => "first-seen order",
                    false =>
                        "first-seen order, or partition order when merged by partition \
                              (nothing reads their order)",
                }
            )
        }];
        if let Some(keep) = &self.partition_keys {
            let keys: Vec<String> = (keep.iter().enumerate())
                .filter(|(_, &k)| k)
                .map(|(i, _)| format!("{}", i + 1))
                .collect();
            d.push(format!(
                "partitions by the hash of key(s) {} alone: each partition holds whole groups \
                 of the aggregate above",
                keys.join(", ")
            ));
        }
        if self.whole_groups {
            d.push(
                "each morsel is a partition of the aggregate below, holding whole groups: a \
                 group table per morsel, handed on in morsel order with no merge"
                    .into(),
            );
        }
        d.extend(crate::physical::fused_details(
            self.group.iter().chain(
                self.aggs
                    .iter()
                    .flat_map(|a| a.arg.as_ref().into_iter().chain(&a.second)),
            ),
        ));
        d
    }

    fn name(&self) -> &'static str {
        "HashAggregate"
    }

    fn partial_bytes(&self, p: &Partial) -> usize {
        match p {
            Partial::Global(states) => states.iter().flatten().map(Accumulator::heap_bytes).sum(),
            Partial::Table(t) => {
                t.keys.heap_bytes() + t.accs.iter().map(Accumulator::heap_bytes).sum::<usize>()
            }
            Partial::Ints(t) => t.heap_bytes(),
            Partial::Rows(r) => r.heap_bytes(),
            Partial::Pending(r) => r.heap_bytes(),
        }
    }

    fn output_bytes(&self, output: &Vec<Batch>) -> usize {
        output.iter().map(Batch::window_bytes).sum()
    }

    fn consume(&self, _seq: u64, batches: Vec<Batch>) -> ExecResult<Partial> {
        if self.group.is_empty() {
            return self.consume_global(&batches).map(Partial::Global);
        }
        match self.whole_groups {
            true => self.consume_grouped(&batches, in_a_table),
            false => self.consume_grouped(&batches, many_groups),
        }
    }

    fn partial_details(&self, partials: &[Partial]) -> Vec<String> {
        if self.group.is_empty() {
            return Vec::new();
        }
        let scattered = partials.iter().filter(|p| p.is_scattered()).count();
        let pending = partials
            .iter()
            .filter(|p| matches!(p, Partial::Pending(_)))
            .count();
        let mut d = vec![format!(
            "{scattered} of {} morsels scattered by key hash, {pending} kept as rows for the \
             merge (many distinct keys)",
            partials.len()
        )];
        d.extend(
            self.dense_layout(partials)
                .map(|l| l.describe(self.threads)),
        );
        d
    }

    fn finish(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        if self.group.is_empty() {
            return self.merge_global(partials);
        }
        if self.whole_groups {
            return self.concat_tables(partials);
        }
        let groups: usize = partials.iter().map(Partial::table_groups).sum();
        if self.ranges_apart(&partials) {
            return self.merge_apart(partials);
        }
        if let Some(layout) = self.dense_layout(&partials) {
            return self.merge_dense(partials, layout);
        }
        // Many groups in the partials may still be few in all (the same keys in every
        // morsel, as Q15's 10K suppliers over 731 morsels): their stored hashes tell.
        let many = || {
            // Integer keys in a narrower range are fewer (one more for NULL).
            if let Some((lo, hi)) = int_bounds(&partials) {
                if (hi as i128 - lo as i128 + 2) < PARTITIONED_MERGE_GROUPS as i128 {
                    return false;
                }
            }
            let mut sketch = Sketch(vec![0u64; SKETCH_BITS / 64]);
            for p in &partials {
                match p {
                    Partial::Table(t) => (0..t.keys.len()).for_each(|g| sketch.set(t.keys.hash(g))),
                    Partial::Ints(t) => t.values().iter().for_each(|&v| sketch.set(int_hash(v))),
                    Partial::Pending(r) => r.for_each_hash(|h| sketch.set(h)),
                    Partial::Global(_) | Partial::Rows(_) => {}
                }
            }
            sketch.distinct() >= PARTITIONED_MERGE_GROUPS as f64
        };
        if partials.iter().any(Partial::is_scattered)
            || groups >= PARTITIONED_MERGE_GROUPS && many()
        {
            self.merge_partitioned(partials)
        } else {
            self.merge_serial(partials)
        }
    }
}

impl AggregateSink {
    /// A morsel's partial under GROUP BY; `scatter` decides from the first batch's keys
    /// whether its rows are scattered.
    fn consume_grouped(
        &self,
        batches: &[Batch],
        decide: fn(&BatchKeys) -> Grouping,
    ) -> ExecResult<Partial> {
        let mut partial: Option<Partial> = None;
        for batch in batches {
            let rows = batch.num_rows();
            if rows == 0 {
                continue;
            }
            let key_cols = self
                .group
                .iter()
                .map(|e| e.evaluate(batch))
                .collect::<ExecResult<Vec<_>>>()?;
            let keys = match key_cols.as_slice() {
                [one] if is_int_column(one) => BatchKeys::Int(one),
                [Column::Utf8(one)] => BatchKeys::Str(one),
                cols if multi_key_columns(cols) => BatchKeys::Columns(cols),
                cols => {
                    let (encoded, hashes) = encode_with_hashes(cols);
                    BatchKeys::Encoded(encoded, hashes)
                }
            };
            let mut args = Vec::with_capacity(self.aggs.len());
            for a in &self.aggs {
                a.evaluate(batch, &mut args)?;
            }
            let p = match &mut partial {
                Some(p) => p,
                None => partial.insert(match (decide(&keys), &keys) {
                    // Integer keys are kept by value for the merge, which may take them
                    // by their values' offsets into a narrow range.
                    (Grouping::Scatter { min_groups }, BatchKeys::Int(_)) => {
                        Partial::Pending(PendingRows::new(min_groups))
                    }
                    (Grouping::Scatter { .. }, _) => Partial::Rows(ScatteredRows::new()),
                    (Grouping::Pending { min_groups }, _) => {
                        Partial::Pending(PendingRows::new(min_groups))
                    }
                    (Grouping::Table { groups }, BatchKeys::Int(col)) => {
                        let mut table = IntTable::new(col.data_type(), self.new_accs()?);
                        table.reserve(groups);
                        Partial::Ints(table)
                    }
                    (Grouping::Table { groups }, _) => {
                        let mut table = self.new_table()?;
                        table.reserve(groups, &keys);
                        Partial::Table(table)
                    }
                }),
            };
            match (p, &keys) {
                (Partial::Ints(t), BatchKeys::Int(col)) => t.update(col, &args)?,
                (Partial::Ints(_), _) => {
                    return Err(ExecError::Internal(
                        "a group key changed type within a morsel".into(),
                    ))
                }
                (Partial::Table(t), _) => t.update(&keys, &args)?,
                (Partial::Rows(r), _) => {
                    r.push_batch(keys, &args, |key, hash| self.partition_of(key, hash))?
                }
                (Partial::Pending(r), _) => r.push(keys, args),
                (Partial::Global(_), _) => {
                    return Err(ExecError::Internal(
                        "a grouped aggregate made a global partial".into(),
                    ))
                }
            }
        }
        match partial {
            Some(p) => Ok(p),
            None => self.new_table().map(Partial::Table),
        }
    }

    /// A global aggregate's partial: its states over a morsel's batches, every row in the
    /// one group, no keys to encode (`None` when the batches have no rows).
    fn consume_global(&self, batches: &[Batch]) -> ExecResult<Option<Vec<Accumulator>>> {
        let mut states: Option<Vec<Accumulator>> = None;
        for batch in batches {
            let rows = batch.num_rows();
            if rows == 0 {
                continue;
            }
            let accs = match &mut states {
                Some(accs) => accs,
                None => states.insert(self.new_accs()?),
            };
            for (acc, spec) in accs.iter_mut().zip(&self.aggs) {
                acc.resize(1);
                let mut args = Vec::with_capacity(2);
                spec.evaluate(batch, &mut args)?;
                acc.update_global(rows, Args::of(&args))?;
            }
        }
        Ok(states)
    }

    /// Folds a global aggregate's morsel states in morsel order into its one output row
    /// (over no rows too), as the serial merge folds a table's group.
    fn merge_global(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let mut accs = self.new_accs()?;
        for p in partials {
            match p {
                Partial::Global(Some(mut states)) => merge_accs(&mut accs, &mut states, 1, &[0])?,
                Partial::Global(None) => {}
                _ => {
                    return Err(ExecError::Internal(
                        "a global aggregate received grouped partials".into(),
                    ))
                }
            }
        }
        let columns = self.output_columns(Vec::new(), 1, accs)?;
        Ok(vec![Batch::try_new(self.schema.clone(), columns, 1)?])
    }

    /// Merges the partials one after another into one table (tables, or rows kept for the
    /// merge, added as they came): by value when they hold integer keys.
    fn merge_serial(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let by_value = |p: &Partial| match p {
            Partial::Ints(_) => true,
            Partial::Pending(r) => r.int_type().is_some(),
            _ => false,
        };
        if partials.iter().any(by_value) {
            return self.merge_ints(partials);
        }
        let mut global = self.new_table()?;
        let mut local = LocalIds::default();
        for p in partials {
            let mut p = match p {
                Partial::Table(p) => p,
                Partial::Pending(rows) => {
                    let (mut states, mapping) =
                        rows.states(&mut local, self.new_accs()?, |keys| Ok(global.ids(&keys)))?;
                    merge_accs(&mut global.accs, &mut states, global.keys.len(), mapping)?;
                    continue;
                }
                Partial::Ints(_) | Partial::Rows(_) | Partial::Global(_) => {
                    return Err(ExecError::Internal(
                        "scattered rows or a global partial reached the serial merge".into(),
                    ))
                }
            };
            let mapping: Vec<u32> = (0..p.keys.len())
                .map(|g| global.keys.intern(p.keys.key(g), p.keys.hash(g)).0)
                .collect();
            merge_accs(&mut global.accs, &mut p.accs, global.keys.len(), &mapping)?;
        }
        let groups = global.keys.len();
        let columns = self.output(global.keys.keys(), global.accs)?;
        Ok(vec![Batch::try_new(self.schema.clone(), columns, groups)?])
    }

    /// The tables of morsels that hold whole groups ([`Self::whole_groups`]), each output
    /// as it is, on the workers, in morsel order: no group is in two tables, so this is
    /// first-seen order, and each group's states saw its rows in input order.
    fn concat_tables(&self, partials: Vec<Partial>) -> ExecResult<Vec<Batch>> {
        let outputs = parallel_map(self.threads, partials, |_, p| match p {
            Partial::Table(t) if t.keys.is_empty() => Ok(Vec::new()),
            Partial::Table(t) => {
                let groups = t.keys.len();
                let columns = self.output(t.keys.keys(), t.accs)?;
                Ok(vec![Batch::try_new(self.schema.clone(), columns, groups)?])
            }
            Partial::Ints(t) if t.len() == 0 => Ok(Vec::new()),
            Partial::Ints(t) => self.int_table_output(t),
            Partial::Rows(_) | Partial::Pending(_) | Partial::Global(_) => Err(
                ExecError::Internal("a morsel of whole groups was not grouped in a table".into()),
            ),
        });
        let mut batches = Vec::new();
        for out in outputs {
            batches.extend(out?);
        }
        if batches.is_empty() {
            batches.push(Batch::empty(self.schema.clone()));
        }
        Ok(batches)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use morsel_storage::{Field, PrimitiveColumn, Schema, Utf8Column};

    use super::*;
    use morsel_storage::test_rng::Rng;

    /// Grouped by the input columns `keys` (of `k`, `s`); output schema: the keys, then one
    /// column per aggregate (types as finished).
    fn sink(threads: usize, keys: &[usize]) -> AggregateSink {
        let agg = |func, arg: Option<usize>, arg_type, distinct, constant| AggSpec {
            func,
            arg: arg.map(PhysExpr::Column),
            arg_type,
            distinct,
            constant,
            second: None,
        };
        let aggs = vec![
            agg(AggFunc::CountStar, None, DataType::Int64, false, None),
            agg(AggFunc::Sum, Some(2), DataType::Float64, false, None),
            agg(AggFunc::Avg, Some(0), DataType::Int64, false, None),
            agg(AggFunc::Min, Some(1), DataType::Utf8, false, None),
            agg(AggFunc::StddevSamp, Some(2), DataType::Float64, false, None),
            agg(
                AggFunc::StringAgg,
                Some(1),
                DataType::Utf8,
                false,
                Some(ScalarValue::Utf8("|".into())),
            ),
            agg(AggFunc::Median, Some(2), DataType::Float64, false, None),
            agg(AggFunc::Count, Some(2), DataType::Float64, true, None),
        ];
        let types = [
            DataType::Int64,
            DataType::Utf8,
            DataType::Int64,
            DataType::Float64,
            DataType::Float64,
            DataType::Utf8,
            DataType::Float64,
            DataType::Utf8,
            DataType::Float64,
            DataType::Int64,
        ];
        let key_types: Vec<DataType> = keys.iter().map(|&k| types[k]).collect();
        let fields = key_types
            .iter()
            .chain(&types[2..])
            .enumerate()
            .map(|(i, t)| Field::new(format!("c{i}"), *t, true))
            .collect();
        AggregateSink {
            group: keys.iter().map(|&k| PhysExpr::Column(k)).collect(),
            key_types,
            aggs,
            schema: Arc::new(Schema::new(fields)),
            threads,
            keep_order: true,
            partition_keys: None,
            whole_groups: false,
        }
    }

    type SinkOf = fn(usize, &[usize]) -> AggregateSink;

    /// [`sink`] with its first four aggregates only (count(*), sum, avg, min: states that
    /// take a group's one row as exactly as they fold it).
    fn simple_sink(threads: usize, keys: &[usize]) -> AggregateSink {
        let mut s = sink(threads, keys);
        s.aggs.truncate(4);
        let fields = s.schema.fields[..keys.len() + 4].to_vec();
        s.schema = Arc::new(Schema::new(fields));
        s
    }

    /// Morsels of (k Int64, s Utf8, x Float64) rows, with NULLs and repeated keys, each in
    /// two batches.
    fn morsels() -> Vec<Vec<Batch>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
        ]));
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut next = move |n: u64| rng.below(n);
        let words = ["a", "bb", "c", "dd", "e"];
        (0..9)
            .map(|_| {
                let rows = next(900) as usize;
                let k: Vec<Option<i64>> = (0..rows)
                    .map(|_| (next(10) > 0).then(|| next(400) as i64))
                    .collect();
                let s: Vec<Option<&str>> = (0..rows)
                    .map(|_| (next(8) > 0).then(|| words[next(5) as usize]))
                    .collect();
                let x: Vec<Option<f64>> = (0..rows)
                    .map(|_| (next(6) > 0).then(|| next(1000) as f64 / 7.0))
                    .collect();
                let columns = vec![
                    Column::Int64(PrimitiveColumn::from_options(k)),
                    Column::Utf8(Utf8Column::from_strs(s)),
                    Column::Float64(PrimitiveColumn::from_options(x)),
                ];
                let batch = Batch::try_new(schema.clone(), columns, rows).unwrap();
                let cut = rows / 3;
                vec![batch.slice(0, cut), batch.slice(cut, rows - cut)]
            })
            .collect()
    }

    fn rows(batches: &[Batch]) -> Vec<Vec<String>> {
        batches
            .iter()
            .flat_map(|b| {
                (0..b.num_rows()).map(move |r| {
                    b.columns()
                        .iter()
                        .map(|c| match c.scalar_at(r) {
                            // Bits, so that equal means identical.
                            ScalarValue::Float64(f) => format!("{:x}", f.to_bits()),
                            v => format!("{v:?}"),
                        })
                        .collect()
                })
            })
            .collect()
    }

    const TABLE: fn(&BatchKeys) -> Grouping = |_| Grouping::Table { groups: 0 };
    /// Scattered (kept, for one integer key), with the first batch's distinct keys
    /// counted exactly (the lower bound a sketch's set bits give).
    const SCATTER: fn(&BatchKeys) -> Grouping = |keys| Grouping::Scatter {
        min_groups: distinct_keys(keys),
    };
    /// Kept, with the first batch's distinct keys counted exactly.
    const PENDING: fn(&BatchKeys) -> Grouping = |keys| Grouping::Pending {
        min_groups: distinct_keys(keys),
    };

    fn distinct_keys(keys: &BatchKeys) -> usize {
        let distinct = |k: &RowKeys, rows: usize| -> usize {
            let keys: std::collections::HashSet<&[u8]> = (0..rows).map(|i| k.key(i)).collect();
            keys.len()
        };
        let encoded =
            |cols: &[Column]| distinct(&RowKeys::encode(cols, cols[0].len()), cols[0].len());
        match keys {
            BatchKeys::Int(col) => encoded(std::slice::from_ref(*col)),
            BatchKeys::Str(col) => encoded(&[Column::Utf8((*col).clone())]),
            BatchKeys::Columns(cols) => encoded(cols),
            BatchKeys::Encoded(k, hashes) => distinct(k, hashes.len()),
        }
    }

    /// An aggregate by `(k, s)` partitioned by `s` alone hands out batches that each hold
    /// whole groups of `s` (morsels grouped in tables and scattered alike), with the groups
    /// and bits of the partitioned merge by both keys; an aggregate by `s` over them, a
    /// batch per morsel and no merge, equals one that merges, in first-seen order.
    #[test]
    fn aggregate_partitioned_by_some_keys_hands_whole_groups_above() {
        let input = morsels();
        let below = |threads: usize, partition_keys: Option<Vec<bool>>| {
            let mut s = sink(threads, &[0, 1]);
            s.keep_order = false;
            s.partition_keys = partition_keys;
            let partials = (input.iter().enumerate())
                .map(|(i, m)| match i % 2 {
                    0 => s.consume_grouped(m, TABLE).unwrap(),
                    _ => s.consume_grouped(m, SCATTER).unwrap(),
                })
                .collect();
            s.merge_partitioned(partials).unwrap()
        };
        let mut by_both = rows(&below(1, None));
        by_both.sort();
        let above = |whole_groups: bool| {
            let fields = vec![
                Field::new("s", DataType::Utf8, true),
                Field::new("n", DataType::Int64, true),
                Field::new("total", DataType::Int64, true),
            ];
            AggregateSink {
                group: vec![PhysExpr::Column(1)],
                key_types: vec![DataType::Utf8],
                aggs: vec![
                    AggSpec {
                        func: AggFunc::CountStar,
                        arg: None,
                        arg_type: DataType::Int64,
                        distinct: false,
                        constant: None,
                        second: None,
                    },
                    AggSpec {
                        func: AggFunc::Sum,
                        arg: Some(PhysExpr::Column(2)),
                        arg_type: DataType::Int64,
                        distinct: false,
                        constant: None,
                        second: None,
                    },
                ],
                schema: Arc::new(Schema::new(fields)),
                threads: 2,
                keep_order: true,
                partition_keys: None,
                whole_groups,
            }
        };
        let mut expect = None;
        for threads in [1, 2, 8] {
            let batches = below(threads, Some(vec![false, true]));
            assert!(batches.len() > 2, "{} partitions", batches.len());
            let mut got = rows(&batches);
            got.sort();
            assert_eq!(got, by_both, "{threads} threads");
            // No value of `s` in two batches.
            let mut seen = std::collections::HashMap::new();
            for (b, batch) in batches.iter().enumerate() {
                for r in 0..batch.num_rows() {
                    let s = batch.column(1).scalar_at(r);
                    assert_eq!(*seen.entry(format!("{s:?}")).or_insert(b), b, "{s:?}");
                }
            }
            let grouped = |sink: &AggregateSink| {
                let partials = (batches.iter().enumerate())
                    .map(|(i, b)| sink.consume(i as u64, vec![b.clone()]).unwrap())
                    .collect();
                rows(&sink.finish(partials).unwrap())
            };
            let whole = grouped(&above(true));
            assert_eq!(whole, grouped(&above(false)), "{threads} threads");
            assert_eq!(whole.len(), 6, "five words and NULL");
            assert_eq!(
                *expect.get_or_insert(whole.clone()),
                whole,
                "{threads} threads"
            );
        }
    }

    #[test]
    fn partitioned_merge_equals_serial_merge_bit_for_bit() {
        let input = morsels();
        let tables = |s: &AggregateSink| -> Vec<Partial> {
            let grouped = |m: &Vec<Batch>| s.consume_grouped(m, TABLE).unwrap();
            input.iter().map(grouped).collect()
        };
        let serial = sink(1, &[0, 1]);
        let expect = rows(&serial.merge_serial(tables(&serial)).unwrap());
        assert!(expect.len() > 1000, "{} groups", expect.len());
        for threads in [1, 2, 8] {
            let s = sink(threads, &[0, 1]);
            let got = rows(&s.merge_partitioned(tables(&s)).unwrap());
            assert_eq!(got, expect, "{threads} threads");
        }
    }

    /// Tables of one integer key held by value merge, by value or by partition, exactly as
    /// the same tables with encoded keys merge (NULL keys and empty morsels included).
    #[test]
    fn integer_tables_merge_as_encoded_tables_bit_for_bit() {
        let mut input = morsels();
        input.insert(2, vec![input[0][0].slice(0, 0)]);
        let s = sink(2, &[0]);
        let tables = || -> Vec<Partial> {
            input
                .iter()
                .map(|m| s.consume_grouped(m, TABLE).unwrap())
                .collect()
        };
        assert!(tables().iter().any(|p| matches!(p, Partial::Ints(_))));
        let encoded: Vec<Partial> = tables()
            .into_iter()
            .map(|p| match p {
                Partial::Ints(t) => Partial::Table(t.into_encoded()),
                other => other,
            })
            .collect();
        let expect = rows(&s.merge_serial(encoded).unwrap());
        assert!(expect.len() > 300, "{} groups", expect.len());
        assert_eq!(rows(&s.merge_serial(tables()).unwrap()), expect);
        for threads in [1, 2, 8] {
            let s = sink(threads, &[0]);
            let partials = input
                .iter()
                .map(|m| s.consume_grouped(m, TABLE).unwrap())
                .collect();
            assert_eq!(rows(&s.merge_partitioned(partials).unwrap()), expect);
        }
    }

    /// Morsels of sorted keys (runs crossing morsel seams, a morsel of one key, an empty
    /// morsel) merge by concatenation, bit for bit as the serial merge; keys out of order,
    /// or a NULL key, take the other merges.
    #[test]
    fn sorted_keys_merge_by_concatenation_bit_for_bit() {
        let mut sorted = morsels();
        let schema = sorted[0][0].schema().clone();
        let mut key = 0i64;
        let mut rng = Rng(3);
        for (m, morsel) in sorted.iter_mut().enumerate() {
            for batch in morsel.iter_mut() {
                let n = batch.num_rows();
                let k: Vec<i64> = (0..n)
                    .map(|_| {
                        key += i64::from(m != 4 && rng.below(3) == 0);
                        key
                    })
                    .collect();
                let mut columns = batch.columns().to_vec();
                columns[0] = Column::Int64(PrimitiveColumn::from_vec(k));
                *batch = Batch::try_new(schema.clone(), columns, n).unwrap();
            }
        }
        sorted.insert(3, vec![sorted[0][0].slice(0, 0)]);
        let s = sink(2, &[0]);
        let tables = |input: &[Vec<Batch>]| -> Vec<Partial> {
            input
                .iter()
                .map(|m| s.consume_grouped(m, TABLE).unwrap())
                .collect()
        };
        assert!(s.ranges_apart(&tables(&sorted)));
        let expect = rows(&s.merge_serial(tables(&sorted)).unwrap());
        assert!(expect.len() > 500, "{} groups", expect.len());
        assert_eq!(rows(&s.merge_apart(tables(&sorted)).unwrap()), expect);
        assert_eq!(rows(&s.finish(tables(&sorted)).unwrap()), expect);
        // Two morsels swapped: their ranges overlap the others'.
        let mut swapped = sorted.clone();
        swapped.swap(1, 6);
        assert!(!s.ranges_apart(&tables(&swapped)));
        // The random keys have NULLs.
        assert!(!s.ranges_apart(&tables(&morsels())));
    }

    /// Every morsel grouped in a table and the tables merged serially at one thread: what
    /// the other ways of grouping must give.
    fn merged_tables(input: &[Vec<Batch>], keys: &[usize]) -> Vec<Vec<String>> {
        let serial = sink(1, keys);
        let tables = input
            .iter()
            .map(|m| serial.consume_grouped(m, TABLE).unwrap())
            .collect();
        let expect = rows(&serial.merge_serial(tables).unwrap());
        assert!(expect.len() > 5, "{} groups", expect.len());
        expect
    }

    /// Every morsel's partial: grouped `how` in every `every`th morsel (the first among
    /// them), in a table in the others.
    fn partials_every(
        s: &AggregateSink,
        input: &[Vec<Batch>],
        every: usize,
        how: fn(&BatchKeys) -> Grouping,
    ) -> Vec<Partial> {
        let way = |i: usize| if i.is_multiple_of(every) { how } else { TABLE };
        let partial = |(i, m): (usize, &Vec<Batch>)| s.consume_grouped(m, way(i)).unwrap();
        input.iter().enumerate().map(partial).collect()
    }

    /// A morsel's rows scattered by key hash give what its group table gives, bit for bit:
    /// every morsel scattered or every other one, at 1, 2 and 8 threads, with one integer
    /// key (grouped by value), one text key (by its bytes) and two keys (encoded). Float
    /// sums agree to rounding only: a table adds a batch with few groups by lanes
    /// (`few_groups`), scattered rows in row order. Each way is the same bit for bit at
    /// every thread count. Without first-seen order put back, the groups are the same ones
    /// in partition order, also the same bit for bit at every thread count.
    #[test]
    fn scattered_rows_equal_group_tables() {
        let input = morsels();
        for keys in [&[0][..], &[1], &[0, 1]] {
            let expect = merged_tables(&input, keys);
            let mut sorted_expect = expect.clone();
            sorted_expect.sort();
            let mut at_one_thread = [None, None, None, None];
            for threads in [1, 2, 8] {
                let ways = [(1, true), (2, true), (1, false), (2, false)];
                for ((every, keep_order), first) in ways.into_iter().zip(&mut at_one_thread) {
                    let s = AggregateSink {
                        keep_order,
                        ..sink(threads, keys)
                    };
                    let partials = partials_every(&s, &input, every, SCATTER);
                    // One integer key's rows are kept by value, and scattered by this
                    // merge (lanes are ruled out).
                    let scattered = |p: &&Partial| match keys {
                        [0] => matches!(p, Partial::Pending(r) if r.never_by_lanes()),
                        _ => p.is_scattered(),
                    };
                    let scattered = partials.iter().filter(scattered).count();
                    assert_eq!(scattered, input.len().div_ceil(every));
                    let got = rows(&s.merge_partitioned(partials).unwrap());
                    if keep_order {
                        assert_same_to_rounding(&got, &expect);
                    } else {
                        assert_ne!(got, expect, "partition order is not first-seen order");
                        let mut sorted = got.clone();
                        sorted.sort();
                        assert_same_to_rounding(&sorted, &sorted_expect);
                    }
                    assert_eq!(&got, first.get_or_insert_with(|| got.clone()), "{threads}");
                }
            }
        }
    }

    /// A morsel's rows kept for the merge give what its table gives, bit for bit (groups,
    /// first-seen order, every state, float sums of batches with few groups added by lanes
    /// included): kept in every morsel or every other one, merged serially (by value for one
    /// integer key, encoded otherwise) or by partition (scattered where lanes are ruled
    /// out: the integer key's morsels; else grouped in a table: the text key's), at 1, 2
    /// and 8 threads.
    #[test]
    fn kept_rows_equal_group_tables() {
        let input = morsels();
        for (keys, scattered) in [(&[0][..], true), (&[1], false), (&[0, 1], true)] {
            let s = sink(1, keys);
            let partials = partials_every(&s, &input, 1, PENDING);
            let never = |p: &Partial| matches!(p, Partial::Pending(r) if r.never_by_lanes());
            assert_eq!(partials.iter().all(never), scattered, "{keys:?}");
            let expect = merged_tables(&input, keys);
            for threads in [1, 2, 8] {
                for (every, partitioned) in [(1, false), (2, false), (1, true), (2, true)] {
                    let s = sink(threads, keys);
                    let partials = partials_every(&s, &input, every, PENDING);
                    let kept = partials.iter().filter(|p| matches!(p, Partial::Pending(_)));
                    assert_eq!(kept.count(), input.len().div_ceil(every));
                    let got = match partitioned {
                        true => s.merge_partitioned(partials),
                        false => s.finish(partials),
                    };
                    let got = rows(&got.unwrap());
                    assert_eq!(got, expect, "{keys:?} every {every} {partitioned}");
                }
            }
        }
    }

    /// One integer key merged by its values' offsets into array states gives what the
    /// serial merge by value gives, bit for bit (groups, first-seen order, every state, NULL
    /// keys), rows kept in every morsel or every other one (keys repeated in a morsel or
    /// not, batches with few groups or many), the rest in tables, with aggregates whose
    /// states take a group's only row straight in (sums, counts, averages, MIN) and with
    /// every other kind, at 1, 2 and 8 threads. Without first-seen order put back, the same
    /// groups in partition order, the same at every thread count. Keys 1000 apart too: a
    /// range wider than the scatter's tables of where keys occur, which then hash the keys.
    #[test]
    fn dense_merge_equals_serial_merge_by_value_bit_for_bit() {
        let mut near = morsels();
        near.insert(4, vec![near[0][0].slice(0, 0)]);
        let spread = |b: &Batch| {
            let mut columns = b.columns().to_vec();
            let Column::Int64(k) = &columns[0] else {
                unreachable!("the key column")
            };
            let wide = (0..k.len()).map(|i| k.is_valid(i).then(|| k.values()[i] * 1000));
            columns[0] = Column::Int64(PrimitiveColumn::from_options(wide));
            Batch::try_new(b.schema().clone(), columns, b.num_rows()).unwrap()
        };
        let far: Vec<Vec<Batch>> = near
            .iter()
            .map(|m| m.iter().map(spread).collect())
            .collect();
        let lanes_possible: fn(&BatchKeys) -> Grouping = |_| Grouping::Pending { min_groups: 1 };
        let one_row_straight = |s: &AggregateSink| {
            let accs = s.new_accs().unwrap();
            accs.iter().all(Accumulator::one_row_folds_exactly)
        };
        assert!(!one_row_straight(&sink(1, &[0])));
        assert!(one_row_straight(&simple_sink(1, &[0])));
        let ways = [SCATTER, PENDING, lanes_possible];
        for (input, how, make) in [&near, &far].into_iter().flat_map(|input| {
            ways.into_iter()
                .flat_map(move |h| [(input, h, sink as SinkOf), (input, h, simple_sink)])
        }) {
            for every in [1, 2] {
                let s = make(1, &[0]);
                let partials = partials_every(&s, input, every, how);
                let layout = dense_layout_of(&partials);
                let expect = rows(&s.merge_serial(partials).unwrap());
                assert!(expect.len() > 300, "{} groups", expect.len());
                let mut sorted_expect = expect.clone();
                sorted_expect.sort();
                let mut at_one_thread = [None, None];
                for threads in [1, 2, 8] {
                    for (keep_order, first) in [true, false].into_iter().zip(&mut at_one_thread) {
                        let s = AggregateSink {
                            keep_order,
                            ..make(threads, &[0])
                        };
                        let partials = partials_every(&s, input, every, how);
                        let got = rows(&s.merge_dense(partials, layout).unwrap());
                        assert_eq!(&got, first.get_or_insert(got.clone()), "{threads} threads");
                        if keep_order {
                            assert_eq!(got, expect, "every {every}, {threads} threads");
                            continue;
                        }
                        assert_ne!(got, expect, "partition order is not first-seen order");
                        let mut sorted = got.clone();
                        sorted.sort();
                        assert_eq!(sorted, sorted_expect);
                    }
                }
            }
        }
    }

    /// The dense merge's layout over partials' key range, whatever their size.
    fn dense_layout_of(partials: &[Partial]) -> super::super::dense_merge::Layout {
        let (lo, hi) = super::super::int_groups::int_bounds(partials).unwrap();
        super::super::dense_merge::Layout::over(lo, hi)
    }

    /// The merge takes the dense way where keys kept by value span a narrow range and the
    /// partials hold enough rows, and gives the serial merge's bits; keys over a wide range
    /// take the hash merge.
    #[test]
    fn narrow_kept_integer_keys_take_the_dense_merge() {
        let schema = morsels()[0][0].schema().clone();
        let mut rng = Rng(17);
        let input = |span: u64, rng: &mut Rng| -> Vec<Vec<Batch>> {
            (0..24)
                .map(|_| {
                    let n = 4000;
                    let k: Vec<Option<i64>> = (0..n)
                        .map(|_| (rng.below(50) > 0).then(|| rng.below(span) as i64 - 7))
                        .collect();
                    let x: Vec<Option<f64>> =
                        (0..n).map(|_| Some(rng.below(1000) as f64 / 3.0)).collect();
                    let s: Vec<Option<&str>> = (0..n).map(|_| Some("w")).collect();
                    let columns = vec![
                        Column::Int64(PrimitiveColumn::from_options(k)),
                        Column::Utf8(Utf8Column::from_strs(s)),
                        Column::Float64(PrimitiveColumn::from_options(x)),
                    ];
                    vec![Batch::try_new(schema.clone(), columns, n).unwrap()]
                })
                .collect()
        };
        for (span, dense) in [(60_000, true), (1 << 40, false)] {
            let input = input(span, &mut rng);
            let s = sink(2, &[0]);
            let partials: Vec<Partial> = input
                .iter()
                .map(|m| s.consume_grouped(m, many_groups).unwrap())
                .collect();
            assert!(partials.iter().all(|p| matches!(p, Partial::Pending(_))));
            assert_eq!(s.dense_layout(&partials).is_some(), dense, "{span}");
            let got = rows(&s.finish(partials).unwrap());
            let partials = input
                .iter()
                .map(|m| s.consume_grouped(m, many_groups).unwrap())
                .collect();
            assert_eq!(got, rows(&s.merge_serial(partials).unwrap()), "{span}");
        }
    }

    /// Equal rows, float cells (written as bits by [`rows`]) within a relative 1e-12.
    fn assert_same_to_rounding(got: &[Vec<String>], want: &[Vec<String>]) {
        assert_eq!(got.len(), want.len());
        let float = |cell: &str| u64::from_str_radix(cell, 16).ok().map(f64::from_bits);
        for (g, w) in got.iter().flatten().zip(want.iter().flatten()) {
            match (float(g), float(w)) {
                (Some(a), Some(b)) => assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} {b}"),
                _ => assert_eq!(g, w),
            }
        }
    }

    /// A morsel is scattered only when its keys are distinct in about half its rows or more,
    /// whether the keys are read by value or encoded, in whatever order they come.
    #[test]
    fn morsels_with_mostly_distinct_keys_are_scattered() {
        let ints = |n: usize, f: &dyn Fn(usize) -> i64| {
            Column::Int64(PrimitiveColumn::from_vec((0..n).map(f).collect()))
        };
        let decide = |col: Column| {
            let one = std::slice::from_ref(&col);
            let encoded = RowKeys::encode(one, col.len());
            let hashes = (0..col.len()).map(|i| hash_key(encoded.key(i))).collect();
            let scatters = |keys: &BatchKeys| matches!(many_groups(keys), Grouping::Scatter { .. });
            let by_value = scatters(&BatchKeys::Int(&col));
            assert_eq!(by_value, scatters(&BatchKeys::Encoded(encoded, hashes)));
            let text: Vec<String> = (0..col.len())
                .map(|i| format!("{:?}", col.scalar_at(i)))
                .collect();
            let text = Utf8Column::from_strs(text.iter().map(|t| Some(t.as_str())));
            assert_eq!(by_value, scatters(&BatchKeys::Str(&text)));
            by_value
        };
        let mut r = Rng(11);
        let random: Vec<i64> = (0..16_384).map(|_| r.below(1 << 40) as i64).collect();
        assert!(decide(ints(16_384, &|i| i as i64 * 7)));
        assert!(decide(ints(16_384, &|i| random[i])));
        assert!(decide(ints(16_384, &|i| random[i] % 12_000)));
        assert!(!decide(ints(16_384, &|i| random[i] % 16)));
        assert!(!decide(ints(16_384, &|i| random[i] % 3_000)));
        // Runs of four equal keys, and a cycle of 1000 keys: distinct in 1 of 4 and 1 of 16
        // rows, though every row of the first thousand is new in the second.
        assert!(!decide(ints(16_384, &|i| (i / 4) as i64)));
        assert!(!decide(ints(16_384, &|i| (i % 1000) as i64)));
        assert!(!decide(ints(1000, &|i| i as i64)));
        // Past 4096 rows at least three in four distinct settle it without the rest (here
        // one key); fewer (2/3 distinct in the first 4096 rows) read on, to 3 in 10.
        let first = 4 * MIN_SCATTER_ROWS;
        assert!(decide(ints(16_384, &|i| i.min(first) as i64)));
        assert!(!decide(ints(16_384, &|i| random[i] % 5_000)));
        // A table is sized for the keys expected in the whole batch: a thousand keys at
        // random settle it by the first check, for about a thousand groups (not the 16
        // thousand their rate over the first thousand rows would say); keys in runs of four
        // keep their rate, a quarter of the rows.
        let sized = |col: Column| match many_groups(&BatchKeys::Int(&col)) {
            Grouping::Table { groups } => groups,
            other => panic!("{other:?}"),
        };
        let thousand = sized(ints(16_384, &|i| random[i] % 1000));
        assert!((900..=1200).contains(&thousand), "{thousand}");
        let runs = sized(ints(16_384, &|i| (i / 4) as i64));
        assert!((3700..=4500).contains(&runs), "{runs}");
        // A first batch of fewer rows than that is never scattered: its rows are kept for
        // the merge when they are mostly distinct, else grouped in a table.
        let small = |n: usize, f: &dyn Fn(usize) -> i64| many_groups(&BatchKeys::Int(&ints(n, f)));
        // Kept with a lower bound of its distinct keys: the sketch's set bits.
        let Grouping::Pending { min_groups } = small(1000, &|i| i as i64) else {
            panic!("1000 distinct keys in 1000 rows are kept");
        };
        assert!((950..=1000).contains(&min_groups), "{min_groups}");
        assert!(matches!(
            small(300, &|i| random[i] % 10_000),
            Grouping::Pending { .. }
        ));
        assert!(matches!(small(1, &|_| 5), Grouping::Pending { .. }));
        assert!(matches!(
            small(300, &|i| random[i] % 16),
            Grouping::Table { .. }
        ));
        assert!(matches!(
            small(1000, &|i| (i / 4) as i64),
            Grouping::Table { .. }
        ));
    }

    /// Grouping by one integer-like key by value, or one text key by its bytes, gives the
    /// ids and key bytes that encoding the rows gives, NULL included.
    #[test]
    fn key_ids_by_value_match_encoded_key_ids() {
        let mut r = Rng(5);
        let values: Vec<Option<i64>> = (0..2000)
            .map(|_| (r.below(8) != 0).then(|| r.below(300) as i64 - 150))
            .collect();
        let words: Vec<Option<String>> = values
            .iter()
            .map(|v| v.map(|x| "ab".repeat(x.unsigned_abs() as usize % 7) + &x.to_string()))
            .collect();
        // Short and long strings, a third of them ending in a NUL byte (the same string
        // without it must have another word), the last one short and seen before (its
        // word read byte by byte at the buffer's end must be the one read at once before).
        let mut text: Vec<Option<String>> = words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                w.as_ref()
                    .map(|w| w.clone() + ["\0", ""][usize::from(i % 3 != 0)])
            })
            .collect();
        text.push(text.iter().flatten().find(|w| w.len() == 4).cloned());
        // Integers in a small range read through an array per batch, spread ones hashed.
        let columns = [
            Column::Int64(PrimitiveColumn::from_options(values.iter().copied())),
            Column::Int64(PrimitiveColumn::from_options(
                values.iter().map(|v| v.map(|x| x << 40)),
            )),
            Column::Date32(PrimitiveColumn::from_options(
                values.iter().map(|v| v.map(|x| x as i32)),
            )),
            Column::Utf8(Utf8Column::from_strs(text.iter().map(|w| w.as_deref()))),
        ];
        for col in &columns {
            let mut by_value = KeyInterner::new();
            let ids = match col {
                Column::Utf8(s) => {
                    let mut strs = StrIds::default();
                    let ids = strs.ids(s, &mut by_value);
                    // One entry per distinct string under eight bytes, whatever follows it
                    // in the column's buffer.
                    let short: std::collections::HashSet<&str> = text
                        .iter()
                        .flatten()
                        .map(|w| w.as_str())
                        .filter(|w| w.len() < 8)
                        .collect();
                    assert_eq!(strs.short_strings(), short.len());
                    ids
                }
                _ => IntIds::default().ids(col, |v| intern_int(&mut by_value, v, col.data_type())),
            };
            assert_same_groups(&ids, &by_value, std::slice::from_ref(col));
        }
        // Ids held in an array over a range: the values in it, the values outside it (held
        // in the map) and NULL alike, found again by `get`.
        for (lo, hi) in [(-150, 150), (-20, 40), (200, 300)] {
            let mut by_value = KeyInterner::new();
            let mut ids = IntIds::over_range(lo, hi);
            let got = ids.ids(&columns[0], |v| {
                intern_int(&mut by_value, v, DataType::Int64)
            });
            assert_same_groups(&got, &by_value, &columns[..1]);
            for (i, v) in values.iter().enumerate() {
                assert_eq!(v.map(|x| ids.get(x)), v.map(|_| Some(got[i])), "{v:?}");
            }
            assert_eq!(ids.get(151), None);
        }
        // Several columns by their values' ids: two, three, and four (16 bits each) where
        // one column outgrows its 16 bits in the second batch and the rest are encoded.
        let n = values.len();
        let many = Column::Int64(PrimitiveColumn::from_vec((0..n as i64 * 40).collect()));
        let columns = [
            Column::Int64(PrimitiveColumn::from_options(values.iter().copied())),
            Column::Utf8(Utf8Column::from_strs(words.iter().map(|w| w.as_deref()))),
            Column::Date32(PrimitiveColumn::from_options(
                values.iter().map(|v| v.map(|x| (x % 3) as i32)),
            )),
        ];
        for cols in [&columns[..2], &columns[1..], &columns[..]] {
            let (mut by_value, mut multi) = (KeyInterner::new(), MultiIds::default());
            let ids = multi.ids(cols, &mut by_value).expect("fits");
            assert_same_groups(&ids, &by_value, cols);
        }
        // Few combinations, read through an array: one-byte flags (a value first seen in the
        // second batch, NULLs in the third) beside small integers, batch after batch.
        let (mut by_value, mut multi) = (KeyInterner::new(), MultiIds::default());
        let (mut all_ids, mut batches) = (Vec::new(), Vec::new());
        for b in 0..3 {
            let flag = |i: usize| match (b, i % 4) {
                (2, 3) => None,
                (0, _) => Some(["A", "R"][i % 2]),
                _ => Some(["A", "R", "N"][i % 3]),
            };
            let cols = vec![
                Column::Utf8(Utf8Column::from_strs((0..n).map(flag))),
                columns[2].clone(),
            ];
            all_ids.extend(multi.ids(&cols, &mut by_value).expect("fits"));
            batches.push(cols);
        }
        let flat: Vec<Column> = (0..2)
            .map(|c| {
                Column::concat(&batches.iter().map(|b| b[c].clone()).collect::<Vec<_>>()).unwrap()
            })
            .collect();
        assert_same_groups(&all_ids, &by_value, &flat);
        // Only one-byte flags, two and three of them, read by their bytes: a value first
        // seen in the second batch (the array grows), NULLs in the third (which packs), and
        // windows of a column at an odd offset; the ids stay those of the same groups.
        for width in [2, 3] {
            let (mut by_value, mut multi) = (KeyInterner::new(), MultiIds::default());
            let (mut all_ids, mut batches) = (Vec::new(), Vec::new());
            for b in 0..4 {
                let flag = |c: usize, i: usize| match (b, (i + c) % 5) {
                    (2, 4) => None,
                    (0, k) => Some(["A", "R"][k % 2]),
                    (_, k) => Some(["A", "R", "N", "F"][(k + c) % 4]),
                };
                let cols: Vec<Column> = (0..width)
                    .map(|c| {
                        let whole = Utf8Column::from_strs((0..n + 3).map(|i| flag(c, i)));
                        Column::Utf8(whole.slice(3, n))
                    })
                    .collect();
                all_ids.extend(multi.ids(&cols, &mut by_value).expect("fits"));
                batches.push(cols);
            }
            let flat: Vec<Column> = (0..width)
                .map(|c| {
                    Column::concat(&batches.iter().map(|b| b[c].clone()).collect::<Vec<_>>())
                        .unwrap()
                })
                .collect();
            assert_same_groups(&all_ids, &by_value, &flat);
        }
        let (mut by_value, mut multi) = (KeyInterner::new(), Box::<MultiIds>::default());
        let mut batches = Vec::new();
        for b in 0..40 {
            let mut cols: Vec<Column> = columns.to_vec();
            cols.push(many.slice(b * n, n));
            let mut table = GroupTable {
                keys: std::mem::take(&mut by_value),
                accs: Vec::new(),
                ints: IntIds::default(),
                strs: Box::default(),
                multi,
            };
            table.update(&BatchKeys::Columns(&cols), &[]).unwrap();
            assert_eq!(table.multi.full(), b >= 32, "batch {b}");
            (by_value, multi) = (table.keys, table.multi);
            batches.push(cols);
        }
        // Every row of every batch is its own group: ids 0, 1, 2, ... in order.
        assert_eq!(by_value.len(), 40 * n);
        let flat: Vec<Column> = (0..4)
            .map(|c| {
                Column::concat(&batches.iter().map(|b| b[c].clone()).collect::<Vec<_>>()).unwrap()
            })
            .collect();
        let ids: Vec<u32> = (0..40 * n as u32).collect();
        assert_same_groups(&ids, &by_value, &flat);
    }

    /// `ids` and the keys interned in `got` are what interning every row's encoded key over
    /// `cols` gives: the same ids, key bytes and hashes.
    fn assert_same_groups(ids: &[u32], got: &KeyInterner, cols: &[Column]) {
        let rows = cols[0].len();
        let keys = RowKeys::encode(cols, rows);
        let mut encoded = KeyInterner::new();
        let want: Vec<u32> = (0..rows)
            .map(|i| encoded.intern(keys.key(i), hash_key(keys.key(i))).0)
            .collect();
        assert_eq!(ids, want, "{} columns", cols.len());
        assert_eq!(got.len(), encoded.len());
        for g in 0..got.len() {
            assert_eq!(got.key(g), encoded.key(g));
            assert_eq!(got.hash(g), encoded.hash(g));
        }
    }
}
