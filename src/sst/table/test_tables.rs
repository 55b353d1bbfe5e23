//! Small tables written for the unit tests of this folder: the same keys
//! (`k000000`, `k000001`, ...) and values (`v0`, `v1`, ...) in every test.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Table, TableOpenOptions};
use crate::sst::{BlockCache, TableBuilder, TableBuilderOptions};

/// Writes `n` entries `k{i:06}` -> `v{i}` to `dir/t.sst` with `opts`.
pub(super) fn build(dir: &Path, n: usize, opts: TableBuilderOptions) -> PathBuf {
    let path = dir.join("t.sst");
    let file = File::create(&path).unwrap();
    let mut b = TableBuilder::new(file, &path, opts);
    for i in 0..n {
        b.add(format!("k{i:06}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    b.finish().unwrap();
    path
}

/// The table at `path`, reading through `cache`.
pub(super) fn open_cached(path: &Path, cache: &Arc<BlockCache>) -> Table {
    Table::open(
        path,
        TableOpenOptions {
            file_id: 7,
            cache: Some(cache.clone()),
            ..TableOpenOptions::default()
        },
    )
    .unwrap()
}
