//! The simulator's own deterministic random number generator
//! (splitmix64): a run never touches an outside source of randomness.

/// A splitmix64 generator. Every random choice of a run is drawn from one
/// of these, seeded from the run seed, so a run is a pure function of it.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

/// Mixes two words into one (one splitmix64 round over their sum): used to
/// derive per-node seeds from the run seed.
pub fn mix(a: u64, b: u64) -> u64 {
    Rng::new(a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `[0, n)`; 0 when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A value in `[lo, hi]` (inclusive); `lo` when `hi < lo`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p` (computed from 53 random bits, so the
    /// same on every platform).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }

    /// A probability drawn uniformly from `[lo, hi]`.
    pub fn prob(&mut self, lo: f64, hi: f64) -> f64 {
        let u = ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64);
        lo + (hi - lo) * u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(5) < 5);
            let x = r.range(3, 4);
            assert!((3..=4).contains(&x));
        }
        assert_ne!(mix(1, 2), mix(2, 1));
    }
}
