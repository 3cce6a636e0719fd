//! Parallel sorts of elements that are all distinct under their order (sort keys carry their
//! row number), so the result never depends on how the work was split. Two ways:
//! - [`par_sort_by`]: equal runs of the input are sorted on the workers, then adjacent runs
//!   are merged pairwise, each merge cut into pieces of the output that workers fill
//!   independently (where each piece starts in the two runs is found by binary search);
//! - [`par_sort_by_buckets`], for elements whose order starts with an integer: they are
//!   dealt into buckets by its top bits, and the buckets are sorted independently (no merge).

use std::cmp::Ordering;

use crate::scheduler::parallel_map;

/// Below this many elements one thread sorts.
const PARALLEL_SORT_MIN: usize = 1 << 15;

/// Sorts `v` by `cmp`, a total order under which no two elements are equal, on up to
/// `threads` workers.
pub fn par_sort_by<T, F>(v: &mut Vec<T>, threads: usize, cmp: F)
where
    T: Copy + Send + Sync,
    F: Fn(&T, &T) -> Ordering + Sync,
{
    let n = v.len();
    if threads <= 1 || n < PARALLEL_SORT_MIN {
        v.sort_unstable_by(&cmp);
        return;
    }
    let run = n.div_ceil(threads);
    let runs: Vec<&mut [T]> = v.chunks_mut(run).collect();
    parallel_map(threads, runs, |_, r| r.sort_unstable_by(&cmp));
    // Run boundaries; each round merges runs two by two until one is left.
    let mut bounds: Vec<usize> = (0..n).step_by(run).chain([n]).collect();
    let mut src = std::mem::take(v);
    let mut dst = src.clone();
    while bounds.len() > 2 {
        // Pairs (lo, mid, hi) of adjacent runs; a last run without a partner is copied.
        let merges: Vec<(usize, usize, usize)> = bounds
            .windows(3)
            .step_by(2)
            .map(|w| (w[0], w[1], w[2]))
            .collect();
        let mut next_bounds: Vec<usize> = merges.iter().map(|m| m.0).collect();
        let merged_to = merges.last().map_or(0, |m| m.2);
        let mut tasks: Vec<(&[T], &[T], &mut [T])> = Vec::new();
        let mut out: &mut [T] = &mut dst;
        for &(lo, mid, hi) in &merges {
            let (a, b) = (&src[lo..mid], &src[mid..hi]);
            // Pieces in proportion to this merge's share of all elements.
            let pieces = (threads * (hi - lo)).div_ceil(n).max(1);
            let mut done = 0;
            for p in 1..=pieces {
                let end = (hi - lo) * p / pieces;
                let (i0, i1) = (co_rank(a, b, done, &cmp), co_rank(a, b, end, &cmp));
                let (piece, tail) = std::mem::take(&mut out).split_at_mut(end - done);
                out = tail;
                tasks.push((&a[i0..i1], &b[done - i0..end - i1], piece));
                done = end;
            }
        }
        if merged_to < n {
            next_bounds.push(merged_to);
            out.copy_from_slice(&src[merged_to..]);
        }
        next_bounds.push(n);
        parallel_map(threads, tasks, |_, (a, b, out)| merge(a, b, out, &cmp));
        std::mem::swap(&mut src, &mut dst);
        bounds = next_bounds;
    }
    *v = src;
}

/// Bits of the leading word that choose a bucket in [`par_sort_by_buckets`].
const BUCKET_BITS: u32 = 8;

/// Sorts `v` (elements all distinct) on up to `threads` workers when each element's order
/// starts with `lead(element)`, a number below `2^bits`: the elements are first dealt into
/// buckets by the top bits of their lead (one counting pass), then the buckets, each small
/// enough for the cache, are sorted independently. A bucket holding a large share of the
/// elements is sorted by [`par_sort_by`] instead.
pub fn par_sort_by_buckets<T>(
    v: Vec<T>,
    threads: usize,
    bits: u32,
    lead: impl Fn(&T) -> u64,
) -> Vec<T>
where
    T: Ord + Copy + Send + Sync,
{
    let n = v.len();
    if n == 0 || (threads <= 1 && n < PARALLEL_SORT_MIN) {
        let mut v = v;
        v.sort_unstable();
        return v;
    }
    let shift = bits.saturating_sub(BUCKET_BITS);
    let bucket = |x: &T| (lead(x) >> shift) as usize;
    let mut starts = vec![0usize; (1 << bits.min(BUCKET_BITS)) + 1];
    for x in &v {
        starts[bucket(x) + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    let mut next = starts.clone();
    let mut out = vec![v[0]; n];
    for x in &v {
        let slot = &mut next[bucket(x)];
        out[*slot] = *x;
        *slot += 1;
    }
    drop(v);
    // Cut `out` into the buckets; large ones are sorted in parallel one at a time.
    let large = (n / threads.max(1)).max(PARALLEL_SORT_MIN);
    let mut small: Vec<&mut [T]> = Vec::new();
    let mut big: Vec<&mut [T]> = Vec::new();
    let mut rest: &mut [T] = &mut out;
    for w in starts.windows(2) {
        let (b, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        rest = tail;
        if b.len() >= large {
            big.push(b)
        } else if b.len() > 1 {
            small.push(b)
        }
    }
    parallel_map(threads, small, |_, b| b.sort_unstable());
    for b in big {
        let mut owned = b.to_vec();
        par_sort_by(&mut owned, threads, |x, y| x.cmp(y));
        b.copy_from_slice(&owned);
    }
    out
}

/// How many of the first `k` elements of the merge of `a` and `b` come from `a`.
fn co_rank<T>(a: &[T], b: &[T], k: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let (mut lo, mut hi) = (k.saturating_sub(b.len()), k.min(a.len()));
    while lo < hi {
        let i = (lo + hi) / 2;
        // Taking i from a and k - i from b: too few from a if a[i] precedes b's last taken.
        if cmp(&a[i], &b[k - i - 1]) == Ordering::Less {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    lo
}

/// Merges sorted `a` and `b` into `out` (as long as both).
fn merge<T: Copy>(a: &[T], b: &[T], out: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        let take_a = j == b.len() || (i < a.len() && cmp(&a[i], &b[j]) == Ordering::Less);
        if take_a {
            *slot = a[i];
            i += 1;
        } else {
            *slot = b[j];
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use morsel_storage::test_rng::Rng;

    /// Bucketed: equal to a serial sort, leads spread or piled into one bucket.
    #[test]
    fn bucket_sort_equals_serial_sort() {
        let mut r = Rng(9);
        for n in [0, 1, 1000, PARALLEL_SORT_MIN + 1, 100_003] {
            for spread in [40, 2, 0] {
                let v: Vec<u64> = (0..n as u64)
                    .map(|i| (r.below(1 << spread) << 20) | i)
                    .collect();
                let mut want = v.clone();
                want.sort_unstable();
                for threads in [1, 2, 3, 8] {
                    let got = par_sort_by_buckets(v.clone(), threads, spread + 20, |&x| x);
                    assert!(
                        got == want,
                        "{n} elements, spread {spread}, {threads} threads"
                    );
                }
            }
        }
    }

    /// Equal to a serial sort for every size around the run and piece boundaries and every
    /// worker count, odd ones included (a run left without a partner).
    #[test]
    fn parallel_sort_equals_serial_sort() {
        let mut r = Rng(3);
        for n in [0, 1, PARALLEL_SORT_MIN - 1, PARALLEL_SORT_MIN, 100_003] {
            let v: Vec<(u64, u32)> = (0..n as u32).map(|i| (r.below(50), i)).collect();
            let mut want = v.clone();
            want.sort_unstable();
            for threads in [1, 2, 3, 4, 7, 8, 16] {
                let mut got = v.clone();
                par_sort_by(&mut got, threads, |a, b| a.cmp(b));
                assert!(got == want, "{n} elements, {threads} threads");
            }
        }
    }
}
