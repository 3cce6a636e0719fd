//! A hash map from integer keys to 32-bit ids, for join indexes and grouping by one integer
//! key: open addressing with
//! linear probing over one array of (key, id) slots, so a lookup usually touches one cache
//! line. The slot is chosen by Fibonacci hashing (the key times a fixed odd constant, top
//! bits), which spreads sequential and strided keys alike; the table is the same in every
//! run. At most three quarters of the slots are used.

use super::keys::prefetch;

/// Marks an empty slot (ids are row numbers or key numbers, always below it).
const EMPTY: u32 = u32::MAX;

/// The multiplier of Fibonacci hashing: 2^64 divided by the golden ratio, made odd.
pub(super) const FIBONACCI: u64 = 0x9E37_79B9_7F4A_7C15;

pub struct IntMap {
    slots: Vec<Slot>,
    /// 64 minus log2 of the number of slots.
    shift: u32,
    len: usize,
}

#[derive(Clone, Copy)]
struct Slot {
    key: i64,
    id: u32,
}

impl Default for IntMap {
    fn default() -> Self {
        IntMap::with_capacity(0)
    }
}

impl IntMap {
    /// A map with room for `n` keys before it grows.
    pub fn with_capacity(n: usize) -> Self {
        let slots = (n + n / 3 + 1).next_power_of_two().max(16);
        Self {
            slots: vec![Slot { key: 0, id: EMPTY }; slots],
            shift: 64 - slots.trailing_zeros(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `more` keys beyond those held.
    pub fn reserve(&mut self, more: usize) {
        let wanted = self.len + more;
        if (wanted + 1) * 4 > self.slots.len() * 3 {
            let mut bigger = IntMap::with_capacity(wanted);
            for s in self.slots.iter().filter(|s| s.id != EMPTY) {
                bigger.get_or_insert(s.key, || s.id);
            }
            *self = bigger;
        }
    }

    /// Memory held.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    #[inline]
    fn home(&self, key: i64) -> usize {
        ((key as u64).wrapping_mul(FIBONACCI) >> self.shift) as usize
    }

    /// The id of `key`, if it is in the map.
    #[inline]
    pub fn get(&self, key: i64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s.id == EMPTY {
                return None;
            }
            if s.key == key {
                return Some(s.id);
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks the processor to load `key`'s home slot into the cache: a probe first hints
    /// every key of a batch, so the cache misses overlap instead of stalling one by one.
    #[inline]
    pub fn prefetch(&self, key: i64) {
        prefetch(&self.slots[self.home(key)]);
    }

    /// The id of `key`, inserting it with the id `next()` gives when it is new.
    #[inline]
    pub fn get_or_insert(&mut self, key: i64, next: impl FnOnce() -> u32) -> u32 {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = &mut self.slots[i];
            if s.id == EMPTY {
                let id = next();
                debug_assert_ne!(id, EMPTY);
                *s = Slot { key, id };
                self.len += 1;
                return id;
            }
            if s.key == key {
                return s.id;
            }
            i = (i + 1) & mask;
        }
    }

    /// Every id, to be rewritten in place (the keys stay).
    pub fn ids_mut(&mut self) -> impl Iterator<Item = &mut u32> {
        self.slots
            .iter_mut()
            .map(|s| &mut s.id)
            .filter(|id| **id != EMPTY)
    }

    /// Every key, in slot order.
    pub fn keys(&self) -> impl Iterator<Item = i64> + '_ {
        self.slots.iter().filter(|s| s.id != EMPTY).map(|s| s.key)
    }

    /// Doubles the slots, placing every key again.
    fn grow(&mut self) {
        let mut bigger = IntMap::with_capacity(self.slots.len() * 3 / 2 + 1);
        for s in self.slots.iter().filter(|s| s.id != EMPTY) {
            bigger.get_or_insert(s.key, || s.id);
        }
        *self = bigger;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::IntMap;
    use morsel_storage::test_rng::Rng;

    /// Ids as a std map gives them, through growth from a small start, for sequential,
    /// strided, negative and extreme keys; absent keys are not found.
    #[test]
    fn finds_what_a_std_map_finds() {
        let mut r = Rng(5);
        for (spread, start) in [
            (1i64, 0usize),
            (1 << 32, 10),
            (-7, 3),
            (i64::MAX / 5000, 1000),
        ] {
            let mut map = IntMap::with_capacity(start);
            let mut want: HashMap<i64, u32> = HashMap::new();
            for step in 0..20_000 {
                if step == 7 {
                    // Room made with keys held keeps them.
                    map.reserve(3000);
                }
                let k = r.below(5000) as i64 * spread;
                let next = want.len() as u32;
                let id = *want.entry(k).or_insert(next);
                assert_eq!(map.get_or_insert(k, || next), id);
            }
            assert_eq!(map.len(), want.len());
            for k in (0..6000i64).map(|v| v.wrapping_mul(spread)) {
                assert_eq!(map.get(k), want.get(&k).copied(), "key {k}");
            }
            for k in [i64::MIN, i64::MAX, -1] {
                assert_eq!(map.get(k), want.get(&k).copied());
            }
        }
    }
}
