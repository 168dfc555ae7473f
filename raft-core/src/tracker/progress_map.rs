//! [`ProgressMap`]: the progress of every member, by id.

use super::Progress;

/// The progress of every member of a configuration, by id, in ascending id
/// order.
///
/// A sorted vector rather than a tree: a Raft group has a handful of
/// members, so lookups by binary search over one contiguous allocation beat
/// a B-tree in both time and memory (an idle group pays for one small
/// vector, not for a tree node sized for eleven entries). The API is the
/// subset of `BTreeMap`'s that the core uses, with the same names.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProgressMap {
    /// Invariant: sorted by id, ids unique.
    entries: Vec<(u64, Progress)>,
}

impl ProgressMap {
    /// An empty map.
    pub fn new() -> ProgressMap {
        ProgressMap::default()
    }

    /// An empty map with room for `n` members.
    pub fn with_capacity(n: usize) -> ProgressMap {
        ProgressMap {
            entries: Vec::with_capacity(n),
        }
    }

    fn position(&self, id: u64) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&id, |(k, _)| *k)
    }

    /// Where `id` is, if it is there: a linear scan for the handful of
    /// members of a usual group (no branch mispredicted per halving, as a
    /// binary search has on every lookup of a 3- or 5-member map), a binary
    /// search beyond.
    #[inline]
    fn find(&self, id: u64) -> Option<usize> {
        const SCAN: usize = 8;
        if self.entries.len() <= SCAN {
            self.entries.iter().position(|(k, _)| *k == id)
        } else {
            self.position(id).ok()
        }
    }

    /// The progress of `id`.
    #[inline]
    pub fn get(&self, id: &u64) -> Option<&Progress> {
        self.find(*id).map(|i| &self.entries[i].1)
    }

    /// The progress of `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: &u64) -> Option<&mut Progress> {
        match self.find(*id) {
            Some(i) => Some(&mut self.entries[i].1),
            None => None,
        }
    }

    /// Whether `id` has a progress.
    #[inline]
    pub fn contains_key(&self, id: &u64) -> bool {
        self.find(*id).is_some()
    }

    /// Sets the progress of `id`, returning the previous one.
    pub fn insert(&mut self, id: u64, pr: Progress) -> Option<Progress> {
        match self.position(id) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, pr)),
            Err(i) => {
                self.entries.insert(i, (id, pr));
                None
            }
        }
    }

    /// Removes the progress of `id`, returning it.
    pub fn remove(&mut self, id: &u64) -> Option<Progress> {
        match self.position(*id) {
            Ok(i) => Some(self.entries.remove(i).1),
            Err(_) => None,
        }
    }

    /// The number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every (id, progress), in ascending id order.
    pub fn iter(&self) -> impl Iterator<Item = (&u64, &Progress)> + '_ {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// Every (id, progress), mutably, in ascending id order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&u64, &mut Progress)> + '_ {
        self.entries.iter_mut().map(|(k, v)| (&*k, v))
    }

    /// Every id, ascending.
    pub fn keys(&self) -> impl Iterator<Item = &u64> + '_ {
        self.entries.iter().map(|(k, _)| k)
    }

    /// Every progress, in ascending id order.
    pub fn values(&self) -> impl Iterator<Item = &Progress> + '_ {
        self.entries.iter().map(|(_, v)| v)
    }

    /// Every progress, mutably, in ascending id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Progress> + '_ {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The smallest id above `after` (the first id when `None`).
    #[inline]
    pub fn next_id(&self, after: Option<u64>) -> Option<u64> {
        let i = match after {
            None => 0,
            Some(a) => match self.position(a) {
                Ok(i) => i + 1,
                Err(i) => i,
            },
        };
        self.entries.get(i).map(|(k, _)| *k)
    }

    /// Frees spare capacity (after members were removed).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }
}

impl std::fmt::Debug for ProgressMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::ops::Index<&u64> for ProgressMap {
    type Output = Progress;

    fn index(&self, id: &u64) -> &Progress {
        self.get(id).expect("no progress for this id")
    }
}

impl FromIterator<(u64, Progress)> for ProgressMap {
    fn from_iter<I: IntoIterator<Item = (u64, Progress)>>(iter: I) -> ProgressMap {
        let mut m = ProgressMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<'a> IntoIterator for &'a ProgressMap {
    type Item = (&'a u64, &'a Progress);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (u64, Progress)>,
        fn(&'a (u64, Progress)) -> (&'a u64, &'a Progress),
    >;

    fn into_iter(self) -> Self::IntoIter {
        fn split(e: &(u64, Progress)) -> (&u64, &Progress) {
            (&e.0, &e.1)
        }
        self.entries.iter().map(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map keeps ids sorted and unique through inserts and removals,
    /// and next_id walks them in order.
    #[test]
    fn sorted_unique_and_walkable() {
        let mut m = ProgressMap::new();
        for id in [5, 1, 3, 1] {
            m.insert(id, Progress::new(id, 4, 0));
        }
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(m.next_id(None), Some(1));
        assert_eq!(m.next_id(Some(1)), Some(3));
        assert_eq!(m.next_id(Some(2)), Some(3));
        assert_eq!(m.next_id(Some(5)), None);
        assert!(m.remove(&3).is_some());
        assert!(m.remove(&3).is_none());
        assert_eq!(m.len(), 2);
        assert_eq!(m[&5].next, 5);
        assert!(m.get_mut(&7).is_none());
    }

    /// Lookups find every member and only members, by the linear scan of
    /// small maps and by the binary search beyond, at every size across
    /// the boundary, whatever order the ids were inserted in.
    #[test]
    fn lookups_agree_at_every_size() {
        for n in 0..=20u64 {
            let mut m = ProgressMap::new();
            // Odd ids, inserted out of order: every other one from the top
            // down, then the rest from the bottom up.
            let odd = |k: u64| 2 * k + 1;
            let ids: Vec<u64> = (0..n)
                .rev()
                .step_by(2)
                .chain((0..n).filter(|k| (n - 1 - k) % 2 == 1))
                .map(odd)
                .collect();
            for &id in &ids {
                m.insert(id, Progress::new(id + 100, 4, 0));
            }
            assert_eq!(m.len() as u64, n);
            for id in 0..=2 * n + 2 {
                let member = id % 2 == 1 && id < 2 * n;
                assert_eq!(m.contains_key(&id), member, "n={n} id={id}");
                assert_eq!(
                    m.get(&id).map(|p| p.next),
                    member.then_some(id + 100),
                    "n={n} id={id}"
                );
                assert_eq!(m.get_mut(&id).is_some(), member, "n={n} id={id}");
            }
        }
    }
}
