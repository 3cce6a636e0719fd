//! Sets of a join region's inputs, as bit words: the inputs a condition reads, a part
//! covers, or the search has joined so far. Whether a condition is covered, or two parts
//! are linked, is then a few word operations rather than a scan of lists (ordering a
//! 64-table clique asks that about its 2,016 conditions hundreds of thousands of times).

/// A set of input positions below the region's size (every set of one region has as many
/// words, so two sets compare word by word).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct InputSet(Vec<u64>);

impl InputSet {
    /// The empty set, for a region of `n` inputs.
    pub(super) fn empty(n: usize) -> Self {
        InputSet(vec![0; n.div_ceil(64).max(1)])
    }

    /// The set of `items`, for a region of `n` inputs.
    pub(super) fn of(n: usize, items: impl IntoIterator<Item = usize>) -> Self {
        let mut set = Self::empty(n);
        for i in items {
            set.insert(i);
        }
        set
    }

    pub(super) fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    pub(super) fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// The inputs of both.
    pub(super) fn union(&self, other: &InputSet) -> InputSet {
        InputSet(self.0.iter().zip(&other.0).map(|(a, b)| a | b).collect())
    }

    /// Adds every input of `other`.
    pub(super) fn extend(&mut self, other: &InputSet) {
        self.0.iter_mut().zip(&other.0).for_each(|(a, b)| *a |= b);
    }

    /// Whether every input here is in `other` too.
    pub(super) fn is_subset(&self, other: &InputSet) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a & !b == 0)
    }

    /// Whether an input is in both.
    pub(super) fn intersects(&self, other: &InputSet) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    /// The number of inputs here.
    pub(super) fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The inputs, in ascending order.
    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(k, &w)| {
            // The set bits of `w`, lowest first: each step clears the lowest.
            std::iter::successors((w != 0).then_some(w), |&rest| {
                let rest = rest & (rest - 1);
                (rest != 0).then_some(rest)
            })
            .map(move |rest| k * 64 + rest.trailing_zeros() as usize)
        })
    }

    /// The one input here, if there is exactly one.
    pub(super) fn single(&self) -> Option<usize> {
        let mut it = self.iter();
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }

    /// The first word: the set of the first 64 inputs, for searches over regions that small.
    pub(super) fn low_word(&self) -> u64 {
        self.0[0]
    }
}

#[cfg(test)]
mod tests {
    use super::InputSet;

    #[test]
    fn sets_past_one_word_answer_as_lists_would() {
        let a = InputSet::of(130, [0, 63, 64, 129]);
        let b = InputSet::of(130, [63, 129]);
        let c = InputSet::of(130, [1, 65]);
        assert!(b.is_subset(&a) && !a.is_subset(&b));
        assert!(a.intersects(&b) && !a.intersects(&c));
        assert_eq!(a.iter().collect::<Vec<_>>(), [0, 63, 64, 129]);
        assert_eq!(a.union(&c).len(), 6);
        assert!(a.contains(64) && !a.contains(65) && !a.contains(500));
        assert!(InputSet::empty(130).len() == 0 && InputSet::empty(130).is_subset(&c));
        assert_eq!(
            (b.single(), InputSet::of(130, [129]).single()),
            (None, Some(129))
        );
        assert_eq!(a.low_word(), 1 | 1 << 63);
    }
}
