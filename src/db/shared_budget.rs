//! [`Db::advise_keyspaces`]: one filter memory budget for every keyspace
//! of a store, shared out over keyspaces and levels by the lookups each
//! has served.
//!
//! Each keyspace is costed as [`Db::advise`] costs a store (its levels,
//! their keys, the probes of its files by gets for keys they did not hold,
//! L0 kept at its present bits). The shared design then solves one
//! allocation over every level of every keyspace that has counted gets:
//! the bits that minimise the wasted data-block reads of all the probes
//! counted, `Σ N · fpr(b)`, for the memory their filters hold now
//! ([`crate::filter::math::monkey_allocation_mixed`], each level on its
//! keyspace's own filter family). A keyspace that counted no get keeps its
//! design and its memory out of the pool: with no lookups to weigh, the
//! allocation would leave it no filter. docs/filters.md, "One budget
//! across keyspaces".

use crate::error::{Error, Result};
use crate::filter::math;
use crate::options::FilterOptions;

use super::{Advice, Db};

/// One keyspace's part in [`KeyspacesAdvice`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KeyspaceShare {
    /// The keyspace (`default` for the store's own).
    pub name: String,
    /// Its own advice: levels, keys, probes, and its designs costed alone.
    pub advice: Advice,
    /// Bits per key for each level of `advice.levels` under the shared
    /// budget.
    pub shared_bits_per_key: Vec<f64>,
    /// Its filter memory under the shared budget, bytes.
    pub shared_memory_bytes: u64,
    /// Predicted wasted data-block reads per get of this keyspace: under
    /// its present design, under the best design for its own memory
    /// alone (its `observed` design, or the present one), and under the
    /// shared budget.
    pub wasted_reads_per_get: [f64; 3],
}

/// What [`Db::advise_keyspaces`] found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KeyspacesAdvice {
    /// The keyspaces that share the budget: those that counted gets.
    pub keyspaces: Vec<KeyspaceShare>,
    /// Keyspaces left as they are, each with why.
    pub left_alone: Vec<(String, String)>,
    /// The filter memory of the sharing keyspaces now, bytes: what the
    /// shared design spends too (to the model's rounding).
    pub memory_bytes: u64,
    /// The shared design's filter memory, bytes (modelled).
    pub shared_memory_bytes: u64,
    /// Gets counted by the sharing keyspaces.
    pub gets: u64,
    /// Predicted wasted data-block reads per get over every sharing
    /// keyspace's gets: present designs, each keyspace's best alone, the
    /// shared budget.
    pub wasted_reads_per_get: [f64; 3],
}

impl KeyspacesAdvice {
    /// The filter options of `keyspace` under the shared budget (its bits
    /// on each level, its own family); `None` for a keyspace that does not
    /// share it. Give them at the next open ([`crate::Options::filters`]
    /// with `use_stored_design` off for the default keyspace,
    /// [`crate::Options::keyspace_filters`] for the others), then rebuild.
    pub fn filter_options(&self, keyspace: &str) -> Option<FilterOptions> {
        let k = self.keyspaces.iter().find(|k| k.name == keyspace)?;
        Some(
            k.advice
                .options_for(&k.shared_bits_per_key, k.shared_memory_bytes),
        )
    }
}

impl Db {
    /// One filter memory budget across the store's keyspaces (module docs
    /// of `shared_budget`): the memory every keyspace with counted gets
    /// holds in filters now, shared out over their levels by the gets
    /// each served, with the wasted reads predicted for their gets under
    /// their present designs, under each one's best design alone, and
    /// under the shared one. Apply it with
    /// [`KeyspacesAdvice::filter_options`] and a rebuild.
    ///
    /// Fails when no keyspace has counted a get on a filtered level.
    pub fn advise_keyspaces(&self) -> Result<KeyspacesAdvice> {
        let mut advices = Vec::new();
        let mut left_alone = Vec::new();
        for name in self.keyspace_names() {
            match self.keyspace(&name)?.advise() {
                Ok(a) => advices.push((name, a)),
                Err(Error::InvalidArgument(why)) => left_alone.push((name, why)),
                Err(e) => return Err(e),
            }
        }
        if advices.is_empty() {
            return Err(Error::invalid(
                "no keyspace has counted a get on a filtered level: nothing to share out"
                    .to_string(),
            ));
        }
        Ok(share(advices, left_alone))
    }
}

/// The shared allocation over the keyspaces' own advice.
fn share(advices: Vec<(String, Advice)>, left_alone: Vec<(String, String)>) -> KeyspacesAdvice {
    // L0 keeps its bits (a rebuild does not rewrite it); every other level
    // of every keyspace is one run of the allocation.
    let mut kinds = Vec::new();
    let mut keys = Vec::new();
    let mut weights = Vec::new();
    let mut pool_bits = 0.0;
    for (_, a) in &advices {
        let present = &a.designs[0];
        let fixed = usize::from(a.levels.first() == Some(&0));
        let fixed_bits: f64 = a.level_keys[..fixed]
            .iter()
            .zip(&present.bits_per_key)
            .map(|(&n, &b)| n as f64 * b)
            .sum();
        pool_bits += present.memory_bytes as f64 * 8.0 - fixed_bits;
        for i in fixed..a.levels.len() {
            kinds.push(a.kind);
            keys.push(a.level_keys[i]);
            weights.push(a.absent_probes[i] as f64);
        }
    }
    let pool_keys: u64 = keys.iter().sum();
    let bits = math::monkey_allocation_mixed(
        &kinds,
        &keys,
        &weights,
        pool_bits.max(0.0) / pool_keys.max(1) as f64,
    );
    let mut next = 0;
    let mut keyspaces = Vec::new();
    let (mut wasted, mut gets) = ([0.0f64; 3], 0u64);
    for (name, a) in advices {
        let fixed = usize::from(a.levels.first() == Some(&0));
        let n = a.levels.len() - fixed;
        let shared: Vec<f64> = a.designs[0].bits_per_key[..fixed]
            .iter()
            .copied()
            .chain(bits[next..next + n].iter().copied())
            .collect();
        next += n;
        let shared_memory = a
            .level_keys
            .iter()
            .zip(&shared)
            .map(|(&k, &b)| k as f64 * b / 8.0)
            .sum::<f64>()
            .round() as u64;
        // The present design's wasted reads are on its files' own models;
        // the shared bits' on the family's best model, as the advisor's.
        let shared_wasted = a
            .absent_probes
            .iter()
            .zip(&shared)
            .enumerate()
            .map(|(i, (&p, &b))| {
                let fpr = if i < fixed {
                    a.present_fprs[i]
                } else {
                    math::best_fpr(a.kind, b)
                };
                p as f64 * fpr
            })
            .sum::<f64>()
            / a.gets.max(1) as f64;
        let alone = a
            .designs
            .iter()
            .find(|d| d.name == "observed")
            .unwrap_or(&a.designs[0])
            .wasted_reads_per_get;
        let per_get = [a.designs[0].wasted_reads_per_get, alone, shared_wasted];
        for (w, p) in wasted.iter_mut().zip(per_get) {
            *w += p * a.gets as f64;
        }
        gets += a.gets;
        keyspaces.push(KeyspaceShare {
            name,
            advice: a,
            shared_bits_per_key: shared,
            shared_memory_bytes: shared_memory,
            wasted_reads_per_get: per_get,
        });
    }
    let memory_bytes = keyspaces
        .iter()
        .map(|k| k.advice.designs[0].memory_bytes)
        .sum();
    let shared_memory_bytes = keyspaces.iter().map(|k| k.shared_memory_bytes).sum();
    KeyspacesAdvice {
        keyspaces,
        left_alone,
        memory_bytes,
        shared_memory_bytes,
        gets,
        wasted_reads_per_get: wasted.map(|w| w / gets.max(1) as f64),
    }
}
