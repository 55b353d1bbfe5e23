//! The store a stress run writes: the `Db` and a handle on each of its
//! keyspaces (`default`, `ks1`, `ks2`, ...), made with the run's options.

use std::path::Path;

use bloomlsm::{Db, Keyspace};

use super::codec::State;
use super::failure::{Checked, engine};
use super::options::RunOptions;

/// The name of the keyspace that one operation creates and another drops;
/// its keys' expected state lives in memory only.
pub const SCRATCH: &str = "scratch";

/// The keyspace number the scratch keyspace's values carry.
pub const SCRATCH_ID: u32 = 1000;

/// The scratch keyspace, if it exists, and its keys' states.
#[derive(Default)]
pub struct Scratch {
    /// The handle, while the keyspace exists.
    pub handle: Option<Keyspace>,
    /// Each key's state (empty while the keyspace does not exist).
    pub states: Vec<State>,
}

/// The name of keyspace `ks` of the run ([`SCRATCH_ID`]: the scratch
/// keyspace).
pub fn keyspace_name(ks: u32) -> String {
    match ks {
        0 => "default".to_string(),
        SCRATCH_ID => SCRATCH.to_string(),
        _ => format!("ks{ks}"),
    }
}

/// The open store.
pub struct Store {
    /// The store.
    pub db: Db,
    /// Keyspace `i` of the run is `ks[i]` (`ks[0]` the default keyspace).
    pub ks: Vec<Keyspace>,
}

impl Store {
    /// Opens (or makes) the store in `dir` with `opts`, and each keyspace,
    /// creating those missing with their designs.
    pub fn open(dir: &Path, opts: &RunOptions) -> Checked<Store> {
        let db = engine("open the store", Db::open(dir, opts.store.clone()))?;
        let names = db.keyspace_names();
        let mut ks = vec![engine("open keyspace default", db.keyspace("default"))?];
        for (i, design) in opts.keyspaces.iter().enumerate() {
            let name = keyspace_name(i as u32 + 1);
            let k = if names.contains(&name) {
                engine("open a keyspace", db.keyspace(&name))?
            } else {
                engine(
                    "create a keyspace",
                    db.create_keyspace(&name, design.clone()),
                )?
            };
            ks.push(k);
        }
        Ok(Store { db, ks })
    }

    /// Closes the store, reporting any error.
    pub fn close(self) -> Checked {
        drop(self.ks);
        engine("close the store", self.db.close())
    }
}
