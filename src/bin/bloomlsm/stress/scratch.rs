//! The scratch keyspace: one operation creates it (with a design drawn at
//! random), writes to it and reads it back; a later one checks it and
//! drops it, after which every handle on it must fail. Its expected state
//! lives in memory, reset with each creation; a reopen must find it as it
//! was, and after a kill it is checked for foreign values and dropped.

use bloomlsm::{Bytes, Keyspace};

use super::codec::{State, decode, describe, key, key_index};
use super::failure::{Checked, Failure, engine};
use super::options;
use super::store::{SCRATCH, SCRATCH_ID, Store};
use super::verify::{check, check_entries};
use super::worker::{Worker, lock};

/// Keys of the scratch keyspace.
pub const KEYS: u32 = 256;

/// Creates the scratch keyspace, or writes to it, or drops it.
pub fn create_or_drop(w: &mut Worker, store: &Store) -> Checked {
    let mut sc = lock(&w.sh.scratch);
    let Some(h) = sc.handle.take() else {
        let design = options::design(&mut w.rng);
        let h = engine(
            "create the scratch keyspace",
            store.db.create_keyspace(SCRATCH, design),
        )?;
        sc.states = vec![State::default(); KEYS as usize];
        check_all(&h, &sc.states)?;
        write_some(w, &h, &mut sc.states)?;
        check_all(&h, &sc.states)?;
        sc.handle = Some(h);
        return Ok(());
    };
    check_all(&h, &sc.states)?;
    if w.one_in(2) {
        write_some(w, &h, &mut sc.states)?;
        check_all(&h, &sc.states)?;
        sc.handle = Some(h);
        return Ok(());
    }
    engine("drop the scratch keyspace", store.db.drop_keyspace(SCRATCH))?;
    sc.states.clear();
    let dropped = |what: &str| {
        Failure::mismatch(
            "keyspace_create_drop",
            SCRATCH,
            b"",
            format!("{what} to fail once the keyspace is dropped"),
            "it succeeded",
        )
    };
    if h.get(key(0)).is_ok() {
        return Err(dropped("a read through a handle on it"));
    }
    if h.put(key(0), b"x").is_ok() {
        return Err(dropped("a write through a handle on it"));
    }
    if store.db.keyspace(SCRATCH).is_ok() || store.db.keyspace_names().iter().any(|n| n == SCRATCH)
    {
        return Err(dropped("looking it up by name"));
    }
    Ok(())
}

/// Up to 32 puts, deletes and range deletes.
fn write_some(w: &mut Worker, h: &Keyspace, states: &mut [State]) -> Checked {
    for _ in 0..1 + w.below(32) {
        let k = w.below(u64::from(KEYS)) as u32;
        match w.below(20) {
            0..=11 => {
                let s = states[k as usize].put();
                engine(
                    "put (scratch)",
                    h.put(key(k), super::codec::value(SCRATCH_ID, k, s.version())),
                )?;
                states[k as usize] = s;
            }
            12..=16 => {
                engine("delete (scratch)", h.delete(key(k)))?;
                states[k as usize] = states[k as usize].deleted();
            }
            _ => {
                let end = (k + 1 + w.below(16) as u32).min(KEYS);
                engine("delete_range (scratch)", h.delete_range(key(k), key(end)))?;
                for s in &mut states[k as usize..end as usize] {
                    *s = s.deleted();
                }
            }
        }
    }
    Ok(())
}

/// Checks every key of the scratch keyspace: a scan and `multi_get`.
pub fn check_all(h: &Keyspace, states: &[State]) -> Checked {
    let got: Vec<(Bytes, Bytes)> = engine("scan (scratch)", h.scan(..).collect())?;
    let want: Vec<(u32, State)> = (0..KEYS)
        .map(|k| (k, states[k as usize]))
        .filter(|(_, s)| s.present())
        .collect();
    check_entries(
        "keyspace_create_drop (scan)",
        SCRATCH_ID,
        &got,
        &want,
        false,
    )?;
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let got = engine("multi_get (scratch)", h.multi_get(&keys))?;
    for (k, v) in got.iter().enumerate() {
        check(
            "keyspace_create_drop (multi_get)",
            SCRATCH_ID,
            k as u32,
            v.as_deref(),
            states[k],
        )?;
    }
    Ok(())
}

/// After a kill: a scratch keyspace left behind must hold only values its
/// own keys were given; it is then dropped.
pub fn reset(store: &Store) -> Checked {
    if !store.db.keyspace_names().iter().any(|n| n == SCRATCH) {
        return Ok(());
    }
    let h = engine("open the scratch keyspace", store.db.keyspace(SCRATCH))?;
    for e in h.scan(..) {
        let (k, v) = engine("scan (scratch)", e)?;
        let ok = matches!((key_index(&k), decode(&v)), (Some(i), Some((SCRATCH_ID, j, _))) if i == j && i < KEYS);
        if !ok {
            return Err(Failure::mismatch(
                "recover (scratch keyspace)",
                SCRATCH,
                &k,
                "a value written to this key of the scratch keyspace",
                describe(Some(&v)),
            ));
        }
    }
    engine("drop the scratch keyspace", store.db.drop_keyspace(SCRATCH))
}
